#!/usr/bin/python3
"""Test fixtures that tie the shipped demo model to this PyTorch code (read by the model module's tests):

  fixture.py --model models/demo --data build/ --out model/src/test/resources/io/moemesh/model/demo/

- tokenizer-cases.json: [{"text", "ids"}] from bpe.py, on held-out stories, chat renderings with special tokens
  and odd texts; the Java test asserts the Hugging Face runtime gives the same ids.
- prompts.json + prompt-K.npy, prompt-K-mtp.npy: for a few prompts, the float32 PyTorch logits of the exported
  weights (BF16 → float32, so the same numbers the engine's exact precision runs), main model at every row and
  the MTP head at rows 0..T-2 (row i fed token i+1); logits of ids [0, SLICE) only, to stay small, and the argmax
  and maximum over the whole vocabulary.
"""
import argparse
import json
import os
import random

import numpy as np
import torch

import bpe
from export import load_model
from train import chat_ids

SLICE = 1024
PROMPTS = [("chat-story", "chat", "Tell me a story about a fox."),
           ("chat-fact", "chat", "What color is the owl?"),
           ("story", "text", "Once upon a time, there was a little")]
ODD_TEXTS = ["It was 12345 steps to the 3 big trees.", "Café, naïve, 東京 and 🦊!", "  two  spaces\n\nnew lines\t tab",
             "\"Quotes,\" she said -- (and) [brackets]; done?!", "<｜User｜>Hi<｜Assistant｜>Hello!<｜end▁of▁sentence｜>"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch.set_num_threads(2)
    os.makedirs(args.out, exist_ok=True)
    tok = bpe.Tokenizer(args.model)

    r = random.Random(0)
    with open(os.path.join(args.data, "heldout.txt"), encoding="utf-8") as f:
        stories = [s for s in f.read().split("\n\n") if s.strip()]
    with open(os.path.join(args.data, "chat-heldout.jsonl"), encoding="utf-8") as f:
        chats = [json.loads(line) for line in f]
    texts = r.sample(stories, 12) + ODD_TEXTS
    texts += [f"<｜begin▁of▁sentence｜><｜User｜>{c['user']}<｜Assistant｜>{c['assistant']}<｜end▁of▁sentence｜>"
              for c in r.sample(chats, 8)]
    with open(os.path.join(args.out, "tokenizer-cases.json"), "w", encoding="utf-8") as f:
        json.dump([{"text": t, "ids": tok.encode(t)} for t in texts], f, ensure_ascii=False, indent=0)

    model = load_model(args.model)
    prompts = []
    for k, (name, kind, text) in enumerate(PROMPTS):
        ids = chat_ids(tok, text) if kind == "chat" else [tok.bos_id] + tok.encode(text)
        x = torch.tensor([ids])
        with torch.no_grad():
            logits, mtp = model(x, torch.tensor([ids[1:] + [0]]))  # the last MTP row (fed a dummy) is dropped
        logits, mtp = logits[0].numpy(), mtp[0, :-1].numpy()
        np.save(os.path.join(args.out, f"prompt-{k}.npy"), np.ascontiguousarray(logits[:, :SLICE], dtype="<f4"))
        np.save(os.path.join(args.out, f"prompt-{k}-mtp.npy"), np.ascontiguousarray(mtp[:, :SLICE], dtype="<f4"))
        prompts.append({"name": name, "text": text, "ids": ids,
                        "argmax": logits.argmax(-1).tolist(), "max": logits.max(-1).tolist(),
                        "mtp_argmax": mtp.argmax(-1).tolist(), "mtp_max": mtp.max(-1).tolist()})
    with open(os.path.join(args.out, "prompts.json"), "w", encoding="utf-8") as f:
        json.dump({"vocab_slice": SLICE, "prompts": prompts}, f, ensure_ascii=False)
    print(f"wrote {len(texts)} tokenizer cases and {len(prompts)} prompts to {args.out}")


if __name__ == "__main__":
    main()
