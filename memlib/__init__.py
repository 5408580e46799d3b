__version__ = "0.1.0"

from memlib.gpus import GPU, get_gpu, list_gpus
