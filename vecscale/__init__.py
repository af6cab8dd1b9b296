"""vecscale's shared vocabulary: the names every part agrees on (vocab.py, standard library
only, so that configs/run.py can import it inside gem5) and the one-line error helpers for
YAML input files (yamlinput.py). Imports nothing of ours."""
