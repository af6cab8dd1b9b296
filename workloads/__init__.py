"""The workloads seen from the host: the kernel registry (kernels.py) and the model shapes
(models.py, read from models.yaml). The C sources are under src/."""
