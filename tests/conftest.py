import os
import sys
from pathlib import Path

# Tests never reach a model hub; the statistics cache lives in a per-session folder
# unless the caller set MIA_CACHE_DIR (the converted embedded model is then reused).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("MIA_CACHE_DIR", str(Path.home() / ".cache" / "mia-dashboard-tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
