"""Shared pytest setup: import the collection from this checkout as ansible_collections.gpufleet.stack."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# collections/ansible_collections/gpufleet/stack links back to the checkout root.
sys.path.insert(0, str(ROOT / "collections"))
