#!/usr/bin/python3
"""Encodes text with a tokenizer.json exactly as Hugging Face `tokenizers` does for the files MoE Mesh writes.

The pipeline (the parts those files use): split out added tokens (longest match first), then per remaining
segment the pre-tokenizer's `Split` steps (behaviour Isolated, each applied to every piece of the last), the
GPT-2 byte-to-unicode map, and byte-level BPE: merge the adjacent pair of lowest rank until none is left.

  bpe.py TOKENIZER_DIR "some text"      prints the ids
"""
import functools
import json
import sys

import regex


def _byte_to_unicode():
    """GPT-2's map: printable Latin-1 bytes stand for themselves, the other 68 bytes map to U+0100 and up."""
    printable = [b for b in range(256) if ord("!") <= b <= ord("~") or 0xA1 <= b <= 0xAC or 0xAE <= b <= 0xFF]
    out, n = {}, 0
    for b in range(256):
        if b in printable:
            out[b] = chr(b)
        else:
            out[b] = chr(256 + n)
            n += 1
    return out


BYTE_TO_UNICODE = _byte_to_unicode()
NO_MERGE = 1 << 60


class Tokenizer:
    def __init__(self, directory):
        with open(f"{directory}/tokenizer.json", encoding="utf-8") as f:
            spec = json.load(f)
        model = spec["model"]
        assert model["type"] == "BPE" and not model.get("byte_fallback")
        self.vocab = model["vocab"]
        self.id_to_token = {i: t for t, i in self.vocab.items()}
        self.ranks = {tuple(m.split(" ")) if isinstance(m, str) else tuple(m): r for r, m in enumerate(model["merges"])}
        self.added = {t["content"]: t["id"] for t in spec["added_tokens"]}
        longest_first = sorted(self.added, key=len, reverse=True)
        self.added_pattern = regex.compile("|".join(regex.escape(t) for t in longest_first))
        pre = spec["pre_tokenizer"]
        steps = pre["pretokenizers"] if pre["type"] == "Sequence" else [pre]
        self.splits = []
        for step in steps:
            if step["type"] == "Split":
                assert step["behavior"] == "Isolated" and not step["invert"]
                self.splits.append(regex.compile(step["pattern"]["Regex"]))
            else:
                assert step["type"] == "ByteLevel" and not step["add_prefix_space"] and not step["use_regex"]
        self.bos_id = self.added.get("<｜begin▁of▁sentence｜>")
        self.eos_id = self.added.get("<｜end▁of▁sentence｜>")

    def pre_tokenize(self, text):
        pieces = [text]
        for pattern in self.splits:
            nxt = []
            for piece in pieces:
                last = 0
                for m in pattern.finditer(piece):
                    if m.start() > last:
                        nxt.append(piece[last:m.start()])
                    if m.end() > m.start():
                        nxt.append(m.group())
                    last = m.end()
                if last < len(piece):
                    nxt.append(piece[last:])
            pieces = nxt
        return pieces

    @functools.lru_cache(maxsize=1 << 18)
    def _word(self, word):
        symbols = [BYTE_TO_UNICODE[b] for b in word.encode("utf-8")]
        while len(symbols) > 1:
            rank, i = min((self.ranks.get(pair, NO_MERGE), i) for i, pair in enumerate(zip(symbols, symbols[1:])))
            if rank == NO_MERGE:
                break
            left, right = symbols[i], symbols[i + 1]
            merged, j = [], 0
            while j < len(symbols):  # every non-overlapping occurrence, left to right
                if j + 1 < len(symbols) and symbols[j] == left and symbols[j + 1] == right:
                    merged.append(left + right)
                    j += 2
                else:
                    merged.append(symbols[j])
                    j += 1
            symbols = merged
        return tuple(self.vocab[s] for s in symbols)

    def encode_plain(self, text):
        """Ids of text that holds no added token."""
        ids = []
        for piece in self.pre_tokenize(text):
            ids.extend(self._word(piece))
        return ids

    def encode(self, text):
        """Ids of text, added-token strings becoming their ids (no BOS/EOS added)."""
        ids, last = [], 0
        for m in self.added_pattern.finditer(text):
            ids += self.encode_plain(text[last:m.start()])
            ids.append(self.added[m.group()])
            last = m.end()
        return ids + self.encode_plain(text[last:])

    def decode(self, ids):
        unicode_to_byte = {c: b for b, c in BYTE_TO_UNICODE.items()}
        out = bytearray()
        for i in ids:
            t = self.id_to_token[i]
            if all(c in unicode_to_byte for c in t):
                out += bytes(unicode_to_byte[c] for c in t)
            else:
                out += t.encode("utf-8")
        return out.decode("utf-8", errors="replace")


if __name__ == "__main__":
    print(Tokenizer(sys.argv[1]).encode(sys.argv[2]))
