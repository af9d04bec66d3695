#!/usr/bin/env python3
"""Write the NBP/1 test vectors' frames as libFuzzer seed files (one file per frame).

    python3 Tests/Fuzz/make_corpus.py OUTPUT_DIR

Every frame of protocol/vectors/valid.json, invalid.json, batch-valid.json and batch-invalid.json
becomes OUTPUT_DIR/<vector id>[-<n>]; a multi-frame vector also gives its frames joined, which the decoder sees as one frame. Standard
library only. The directory is rewritten each time (it is a build product).
"""

import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
VECTORS = os.path.join(HERE, "..", "..", "protocol", "vectors")


def main(out: str) -> int:
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    written = 0
    for file in ("valid.json", "invalid.json", "batch-valid.json", "batch-invalid.json"):
        with open(os.path.join(VECTORS, file), encoding="utf-8") as f:
            vectors = json.load(f)["vectors"]
        for v in vectors:
            frames = [bytes.fromhex(h) for h in v["frames"]]
            seeds = {v["id"]: frames[0]} if len(frames) == 1 else {
                **{f"{v['id']}-{i}": frame for i, frame in enumerate(frames)}, f"{v['id']}-joined": b"".join(frames)}
            for name, data in seeds.items():
                with open(os.path.join(out, name), "wb") as f:
                    f.write(data)
                written += 1
    print(f"make_corpus.py: {written} seed(s) in {out}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
