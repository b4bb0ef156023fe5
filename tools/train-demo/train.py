#!/usr/bin/python3
"""Trains the miniature DeepSeek-V3 (model.py) on the generated corpus, on CPU.

  train.py --data build/ --tokenizer build/tokenizer --out build/run [--minutes 60 | --steps N] [--seed 1]

Documents (stories: BOS text; chats: the chat template's BOS <｜User｜>q<｜Assistant｜>a EOS) are shuffled, packed
into one stream and cut into windows of seq_len + 2 tokens: the main model predicts t_{i+1}, the MTP module
t_{i+2}. Loss = CE_main + λ·CE_mtp + α·balance, with λ 0.3 for the first two thirds and 0.1 after (DeepSeek-V3
§4.2); the routers' correction biases follow the auxiliary-loss-free rule b_i += γ·sign(mean load − load_i) after
every step. AdamW, linear warmup then cosine decay to 10%, over the time budget (--minutes) or a step count.
Writes loss.csv, ckpt.pt (each evaluation), summary.json, loss.png.
"""
import argparse
import csv
import json
import math
import os
import random
import time

import torch
import torch.nn.functional as F

import bpe
from model import Config, DeepseekV3

USER, ASSISTANT = "<｜User｜>", "<｜Assistant｜>"


def documents(data, split, tok):
    """Token ids of every story and chat of a split."""
    docs = []
    with open(os.path.join(data, "train.txt" if split == "train" else "heldout.txt"), encoding="utf-8") as f:
        for story in f.read().split("\n\n"):
            if story.strip():
                docs.append([tok.bos_id] + tok.encode_plain(story.strip()))
    with open(os.path.join(data, f"chat-{split}.jsonl"), encoding="utf-8") as f:
        for line in f:
            turn = json.loads(line)
            docs.append(chat_ids(tok, turn["user"], turn["assistant"]))
    return docs


def chat_ids(tok, user, assistant=None):
    """The chat template's rendering, encoded: specials as their ids, the texts as plain text."""
    ids = [tok.bos_id, tok.added[USER]] + tok.encode_plain(user) + [tok.added[ASSISTANT]]
    if assistant is not None:
        ids += tok.encode_plain(assistant) + [tok.eos_id]
    return ids


def windows(docs, seq_len, rng):
    """Shuffled documents packed into one stream, cut into (n, seq_len + 2) windows with stride seq_len."""
    order = list(range(len(docs)))
    rng.shuffle(order)
    stream = [t for i in order for t in docs[i]]
    n = (len(stream) - 2) // seq_len
    return torch.tensor(stream[: n * seq_len + 2]).unfold(0, seq_len + 2, seq_len)


def losses(model, w):
    """Main and MTP cross-entropy of a batch of windows (B, seq_len + 2)."""
    x, nxt, nxt2 = w[:, :-2], w[:, 1:-1], w[:, 2:]
    logits, mtp_logits = model(x, nxt)
    main = F.cross_entropy(logits.flatten(0, 1), nxt.flatten())
    mtp = F.cross_entropy(mtp_logits.flatten(0, 1), nxt2.flatten())
    return main, mtp, logits, mtp_logits


@torch.no_grad()
def evaluate(model, held, batch):
    model.eval()
    tot = {"main": 0.0, "mtp": 0.0, "acc": 0.0, "mtp_acc": 0.0}
    n = 0
    for i in range(0, len(held), batch):
        w = held[i:i + batch]
        main, mtp, logits, mtp_logits = losses(model, w)
        tot["main"] += main.item() * len(w)
        tot["mtp"] += mtp.item() * len(w)
        tot["acc"] += (logits.argmax(-1) == w[:, 1:-1]).float().mean().item() * len(w)
        tot["mtp_acc"] += (mtp_logits.argmax(-1) == w[:, 2:]).float().mean().item() * len(w)
        n += len(w)
    model.train()
    return {k: v / n for k, v in tot.items()}


def update_biases(model, gamma):
    """Auxiliary-loss-free balancing: raise the bias of underloaded experts, lower that of overloaded ones."""
    for moe in model.moe_layers():
        load = moe.last_load
        moe.gate.e_score_correction_bias += gamma * torch.sign(load.mean() - load)


def plot(csv_path, png_path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    with open(csv_path) as f:
        rows = list(csv.DictReader(f))
    tokens = [int(r["tokens"]) / 1e6 for r in rows]
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=90)
    for key, label, style in (("train_main", "train", "-"), ("heldout_main", "held-out", "-"),
                              ("train_mtp", "train MTP (t+2)", "--"), ("heldout_mtp", "held-out MTP (t+2)", "--")):
        pts = [(t, float(r[key])) for t, r in zip(tokens, rows) if r[key]]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=label)
    ax.set_xlabel("training tokens (millions)")
    ax.set_ylabel("cross-entropy (nats)")
    ax.set_ylim(0, 4)
    ax.grid(alpha=0.3)
    ax.legend()
    ax.set_title("demo model: loss")
    fig.tight_layout()
    fig.savefig(png_path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True)
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--minutes", type=float, default=60)
    ap.add_argument("--steps", type=int, default=0, help="a fixed step count instead of the time budget")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--gamma", type=float, default=1e-3, help="bias update speed")
    ap.add_argument("--alpha", type=float, default=1e-4, help="sequence-wise balance loss weight")
    ap.add_argument("--eval-seconds", type=float, default=240)
    # One thread by default: on a 2-core machine shared with other work, two OpenMP threads spin waiting for each
    # other and ran 5-10x slower (64 tok/s against 1400 tok/s with one).
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    os.makedirs(args.out, exist_ok=True)

    tok = bpe.Tokenizer(args.tokenizer)
    config = Config(vocab_size=len(tok.vocab), bos_token_id=tok.bos_id, eos_token_id=tok.eos_id)
    train_docs, held_docs = documents(args.data, "train", tok), documents(args.data, "heldout", tok)
    held = windows(held_docs, args.seq_len, random.Random(0))[:32]
    model = DeepseekV3(config)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"{sum(map(len, train_docs)) / 1e6:.2f} M training tokens in {len(train_docs)} documents; "
          f"{n_params / 1e6:.2f} M parameters", flush=True)

    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95))
    budget = args.minutes * 60
    start = time.time()

    def progress(step):
        return step / args.steps if args.steps else (time.time() - start) / budget

    log = open(os.path.join(args.out, "loss.csv"), "w", newline="")
    out = csv.writer(log)
    out.writerow(["step", "tokens", "seconds", "lr", "mtp_weight", "train_main", "train_mtp", "heldout_main", "heldout_mtp"])
    step, tokens, epoch, last_eval = 0, 0, 0, start
    avg_main = avg_mtp = None
    batches = iter(())
    while progress(step) < 1:
        try:
            w = next(batches)
        except StopIteration:
            data = windows(train_docs, args.seq_len, rng)
            batches = iter(data[torch.randperm(len(data))].split(args.batch))
            epoch += 1
            continue
        frac = progress(step)
        lr = args.lr * min(1, (step + 1) / args.warmup) * (0.1 + 0.45 * (1 + math.cos(math.pi * min(frac, 1))))
        for g in opt.param_groups:
            g["lr"] = lr
        mtp_weight = 0.3 if frac < 2 / 3 else 0.1
        main, mtp, _, _ = losses(model, w)
        balance = sum(m.last_balance for m in model.moe_layers())
        loss = main + mtp_weight * mtp + args.alpha * balance
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        with torch.no_grad():
            update_biases(model, args.gamma)
        step += 1
        tokens += w[:, :-2].numel()
        avg_main = main.item() if avg_main is None else 0.95 * avg_main + 0.05 * main.item()
        avg_mtp = mtp.item() if avg_mtp is None else 0.95 * avg_mtp + 0.05 * mtp.item()
        elapsed = time.time() - start
        if step % 10 == 0:
            print(f"step {step} epoch {epoch} {tokens / 1e6:.2f}M tok {elapsed:.0f}s {tokens / elapsed:.0f} tok/s "
                  f"lr {lr:.2e} loss {avg_main:.3f} mtp {avg_mtp:.3f}", flush=True)
            row = [step, tokens, f"{elapsed:.1f}", f"{lr:.3e}", mtp_weight, f"{avg_main:.4f}", f"{avg_mtp:.4f}", "", ""]
            if time.time() - last_eval > args.eval_seconds or progress(step) >= 1:
                ev = evaluate(model, held, args.batch)
                row[-2:] = [f"{ev['main']:.4f}", f"{ev['mtp']:.4f}"]
                loads = [m.last_load for m in model.moe_layers()]
                print(f"  held-out loss {ev['main']:.3f} (ppl {math.exp(ev['main']):.2f}) mtp {ev['mtp']:.3f}; "
                      f"max/mean expert load {max((l.max() / l.mean()).item() for l in loads):.2f}", flush=True)
                torch.save(model.state_dict(), os.path.join(args.out, "ckpt.pt"))
                last_eval = time.time()
            out.writerow(row)
            log.flush()
    log.close()
    torch.save(model.state_dict(), os.path.join(args.out, "ckpt.pt"))
    ev = evaluate(model, held, args.batch)
    summary = {"parameters": n_params, "steps": step, "tokens": tokens, "seconds": round(time.time() - start),
               "epochs": round(tokens / sum(map(len, train_docs)), 2), "train_main": avg_main, "train_mtp": avg_mtp,
               "heldout_main": ev["main"], "heldout_ppl": math.exp(ev["main"]), "heldout_mtp": ev["mtp"],
               "heldout_top1": ev["acc"], "heldout_mtp_top1": ev["mtp_acc"], "config": json.loads(config.hf_json())}
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print(json.dumps({k: v for k, v in summary.items() if k != "config"}), flush=True)
    plot(os.path.join(args.out, "loss.csv"), os.path.join(args.out, "loss.png"))


if __name__ == "__main__":
    main()
