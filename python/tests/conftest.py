import sys
from pathlib import Path

# Run from a checkout without installing: src layout plus this folder (fake_torch).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
