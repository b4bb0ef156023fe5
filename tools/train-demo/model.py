"""A miniature DeepSeek-V3 in PyTorch, with the math of MoE Mesh's Java engine (and DeepSeek's inference/model.py):

    h = embed(tokens);  per layer: h = h + attn(attn_norm(h));  h = h + ffn(ffn_norm(h))
    logits = lm_head(norm(h))
    MTP (§2.2): h' = eh_proj([enorm(embed(t_{i+1})) ; hnorm(norm(h)_i)]);  h' = block(h');  head(shared_norm(h'))

Attention is MLA in its unabsorbed form: a low-rank query (q_a → norm → q_b), a latent c_kv with a decoupled rope
key k_pe shared by all heads, rotary pairs interleaved, YaRN frequencies and the mscale² softmax factor. Layers
from first_k_dense_replace on are MoE: sigmoid scores, selection on score + e_score_correction_bias within the
best topk_group groups (a group scores the sum of its top two), weights the unbiased scores normalised, times
routed_scaling_factor, plus the shared expert. Parameter names follow the Hugging Face checkpoint (export.py).
"""
import json
import math
from dataclasses import dataclass, fields

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class Config:
    vocab_size: int = 2048
    hidden_size: int = 256
    intermediate_size: int = 768        # the dense layers' MLP
    moe_intermediate_size: int = 128    # each routed expert, and the shared one per n_shared_experts
    num_hidden_layers: int = 4
    first_k_dense_replace: int = 1
    num_attention_heads: int = 4
    q_lora_rank: int = 96
    kv_lora_rank: int = 64
    qk_nope_head_dim: int = 32
    qk_rope_head_dim: int = 16
    v_head_dim: int = 32
    n_routed_experts: int = 16
    n_shared_experts: int = 1
    num_experts_per_tok: int = 4
    n_group: int = 4
    topk_group: int = 2
    norm_topk_prob: bool = True
    routed_scaling_factor: float = 2.5
    num_nextn_predict_layers: int = 1
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    max_position_embeddings: int = 1024
    rope_factor: float = 4.0
    rope_original_max_position_embeddings: int = 256
    rope_beta_fast: float = 32.0
    rope_beta_slow: float = 1.0
    rope_mscale: float = 1.0
    rope_mscale_all_dim: float = 1.0
    bos_token_id: int = 0
    eos_token_id: int = 1

    def hf_json(self):
        """config.json with the keys of MoE Mesh's shipped configs."""
        c = {
            "architectures": ["DeepseekV3ForCausalLM"], "attention_bias": False,
            # documents are packed with BOS between them, and a story ends where the next document begins: a
            # predicted BOS ends an answer too (Hugging Face lists several end ids the same way)
            "bos_token_id": self.bos_token_id, "eos_token_id": [self.eos_token_id, self.bos_token_id],
            "first_k_dense_replace": self.first_k_dense_replace, "hidden_act": "silu",
            "hidden_size": self.hidden_size, "intermediate_size": self.intermediate_size,
            "kv_lora_rank": self.kv_lora_rank, "max_position_embeddings": self.max_position_embeddings,
            "model_type": "deepseek_v3", "moe_intermediate_size": self.moe_intermediate_size,
            "n_group": self.n_group, "n_routed_experts": self.n_routed_experts,
            "n_shared_experts": self.n_shared_experts, "norm_topk_prob": self.norm_topk_prob,
            "num_attention_heads": self.num_attention_heads, "num_experts_per_tok": self.num_experts_per_tok,
            "num_hidden_layers": self.num_hidden_layers, "num_key_value_heads": self.num_attention_heads,
            "num_nextn_predict_layers": self.num_nextn_predict_layers, "q_lora_rank": self.q_lora_rank,
            "qk_nope_head_dim": self.qk_nope_head_dim, "qk_rope_head_dim": self.qk_rope_head_dim,
            "rms_norm_eps": self.rms_norm_eps,
            "rope_scaling": {
                "beta_fast": self.rope_beta_fast, "beta_slow": self.rope_beta_slow, "factor": self.rope_factor,
                "mscale": self.rope_mscale, "mscale_all_dim": self.rope_mscale_all_dim,
                "original_max_position_embeddings": self.rope_original_max_position_embeddings, "type": "yarn"},
            "rope_theta": self.rope_theta, "routed_scaling_factor": self.routed_scaling_factor,
            "scoring_func": "sigmoid", "tie_word_embeddings": False, "topk_group": self.topk_group,
            "topk_method": "noaux_tc", "torch_dtype": "bfloat16", "v_head_dim": self.v_head_dim,
            "vocab_size": self.vocab_size,
        }
        return json.dumps(c, indent=2) + "\n"

    @staticmethod
    def from_hf_json(text):
        c = json.loads(text)
        y = c["rope_scaling"]
        names = {f.name for f in fields(Config)}
        kw = {k: v for k, v in c.items() if k in names}
        kw.update(rope_factor=y["factor"], rope_original_max_position_embeddings=y["original_max_position_embeddings"],
                  rope_beta_fast=y["beta_fast"], rope_beta_slow=y["beta_slow"], rope_mscale=y["mscale"],
                  rope_mscale_all_dim=y["mscale_all_dim"])
        return Config(**kw)

    @property
    def yarn_active(self):  # as the reference: YaRN changes anything only beyond the original context
        return self.max_position_embeddings > self.rope_original_max_position_embeddings

    def is_moe_layer(self, layer_id):
        return self.n_routed_experts > 0 and layer_id >= self.first_k_dense_replace


def rope_frequencies(c):
    """precompute_freqs_cis in float32: 1/θ^(2i/d), under YaRN the low frequencies divided by factor on a ramp."""
    dim = c.qk_rope_head_dim
    freqs = 1.0 / (c.rope_theta ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    if c.yarn_active:
        def correction_dim(rotations):
            return dim * math.log(c.rope_original_max_position_embeddings / (rotations * 2 * math.pi)) / (2 * math.log(c.rope_theta))
        low = max(math.floor(correction_dim(c.rope_beta_fast)), 0)
        high = min(math.ceil(correction_dim(c.rope_beta_slow)), dim - 1)
        ramp = ((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low if high != low else 0.001)).clamp(0, 1)
        smooth = 1 - ramp
        freqs = freqs / c.rope_factor * (1 - smooth) + freqs * smooth
    return freqs


def softmax_scale(c):
    scale = (c.qk_nope_head_dim + c.qk_rope_head_dim) ** -0.5
    if c.yarn_active and c.rope_mscale_all_dim != 0 and c.rope_factor > 1:
        m = 0.1 * c.rope_mscale_all_dim * math.log(c.rope_factor) + 1.0
        scale *= m * m
    return scale


def apply_rope(x, cos, sin):
    """Rotates interleaved pairs (x[2i], x[2i+1]); x (..., T, d), cos/sin (T, d/2)."""
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1).flatten(-2)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class MLA(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c, H = c, c.num_attention_heads
        self.qk_head_dim = c.qk_nope_head_dim + c.qk_rope_head_dim
        self.q_a_proj = nn.Linear(c.hidden_size, c.q_lora_rank, bias=False)
        self.q_a_layernorm = RMSNorm(c.q_lora_rank, c.rms_norm_eps)
        self.q_b_proj = nn.Linear(c.q_lora_rank, H * self.qk_head_dim, bias=False)
        self.kv_a_proj_with_mqa = nn.Linear(c.hidden_size, c.kv_lora_rank + c.qk_rope_head_dim, bias=False)
        self.kv_a_layernorm = RMSNorm(c.kv_lora_rank, c.rms_norm_eps)
        self.kv_b_proj = nn.Linear(c.kv_lora_rank, H * (c.qk_nope_head_dim + c.v_head_dim), bias=False)
        self.o_proj = nn.Linear(H * c.v_head_dim, c.hidden_size, bias=False)
        self.scale = softmax_scale(c)

    def forward(self, x, cos, sin):
        c, (B, T, _), H = self.c, x.shape, self.c.num_attention_heads
        q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(x))).view(B, T, H, self.qk_head_dim).transpose(1, 2)
        q_nope, q_pe = q.split([c.qk_nope_head_dim, c.qk_rope_head_dim], dim=-1)
        c_kv, k_pe = self.kv_a_proj_with_mqa(x).split([c.kv_lora_rank, c.qk_rope_head_dim], dim=-1)
        kv = self.kv_b_proj(self.kv_a_layernorm(c_kv)).view(B, T, H, -1).transpose(1, 2)
        k_nope, v = kv.split([c.qk_nope_head_dim, c.v_head_dim], dim=-1)
        q = torch.cat([q_nope, apply_rope(q_pe, cos, sin)], dim=-1)
        k_pe = apply_rope(k_pe, cos, sin).unsqueeze(1).expand(B, H, T, c.qk_rope_head_dim)  # one rope key for all heads
        k = torch.cat([k_nope, k_pe], dim=-1)
        scores = (q @ k.transpose(-1, -2)) * self.scale
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        p = scores.masked_fill(causal, float("-inf")).softmax(-1)
        return self.o_proj((p @ v).transpose(1, 2).reshape(B, T, H * c.v_head_dim))


class MLP(nn.Module):
    """w2(silu(w1 x) · w3 x): the dense layers and the shared expert."""

    def __init__(self, dim, inter):
        super().__init__()
        self.gate_proj = nn.Linear(dim, inter, bias=False)
        self.up_proj = nn.Linear(dim, inter, bias=False)
        self.down_proj = nn.Linear(inter, dim, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Gate(nn.Module):
    """noaux_tc routing. The bias steers selection only and is learned by the load rule in train.py, not by SGD."""

    def __init__(self, c):
        super().__init__()
        self.c = c
        self.weight = nn.Parameter(torch.empty(c.n_routed_experts, c.hidden_size))
        self.register_buffer("e_score_correction_bias", torch.zeros(c.n_routed_experts))

    def forward(self, x):
        """x (N, dim) → expert ids (N, k), weights (N, k), all scores (N, E)."""
        c = self.c
        scores = F.linear(x, self.weight).sigmoid()
        choice = scores + self.e_score_correction_bias
        if c.n_group > 1:
            grouped = choice.view(-1, c.n_group, c.n_routed_experts // c.n_group)
            group_scores = grouped.topk(2, dim=-1).values.sum(-1)
            keep = torch.zeros_like(group_scores, dtype=torch.bool).scatter_(1, group_scores.topk(c.topk_group, dim=-1).indices, True)
            choice = grouped.masked_fill(~keep.unsqueeze(-1), float("-inf")).flatten(1)
        ids = choice.topk(c.num_experts_per_tok, dim=-1).indices
        weights = scores.gather(1, ids)
        if c.norm_topk_prob:
            weights = weights / weights.sum(-1, keepdim=True)
        return ids, weights * c.routed_scaling_factor, scores


class MoE(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c, E, d, m = c, c.n_routed_experts, c.hidden_size, c.moe_intermediate_size
        self.gate = Gate(c)
        self.gate_proj = nn.Parameter(torch.empty(E, m, d))  # experts.E.gate_proj.weight, stacked
        self.up_proj = nn.Parameter(torch.empty(E, m, d))
        self.down_proj = nn.Parameter(torch.empty(E, d, m))
        self.shared_experts = MLP(d, c.n_shared_experts * m)
        self.last_load = None   # tokens per expert in the last forward, for the bias update
        self.last_balance = None  # the sequence-wise balance loss of the last forward

    def forward(self, x):
        B, T, d = x.shape
        flat = x.reshape(-1, d)
        ids, weights, scores = self.gate(flat)
        out = torch.zeros_like(flat)
        for e in range(self.c.n_routed_experts):
            rows, slot = (ids == e).nonzero(as_tuple=True)
            if rows.numel() == 0:
                continue
            h = flat[rows]
            y = F.linear(F.silu(F.linear(h, self.gate_proj[e])) * F.linear(h, self.up_proj[e]), self.down_proj[e])
            out.index_add_(0, rows, y * weights[rows, slot].unsqueeze(-1))
        if self.training:
            with torch.no_grad():
                self.last_load = torch.bincount(ids.flatten(), minlength=self.c.n_routed_experts).float()
            self.last_balance = self.sequence_balance(ids.view(B, T, -1), scores.view(B, T, -1))
        return (out + self.shared_experts(flat)).view(B, T, d)

    def sequence_balance(self, ids, scores):
        """DeepSeek-V3 eq. 17-20 per sequence: Σ_i f_i·P_i, f_i = E/(k·T)·count_i, P_i = mean_t of normalised scores."""
        E, k, T = self.c.n_routed_experts, self.c.num_experts_per_tok, ids.shape[1]
        counts = torch.zeros(ids.shape[0], E, device=ids.device).scatter_add_(1, ids.flatten(1), torch.ones_like(ids.flatten(1), dtype=torch.float))
        f = counts * E / (k * T)
        p = (scores / scores.sum(-1, keepdim=True)).mean(1)
        return (f * p).sum(-1).mean()


class Block(nn.Module):
    def __init__(self, c, layer_id):
        super().__init__()
        self.input_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.self_attn = MLA(c)
        self.post_attention_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.mlp = MoE(c) if c.is_moe_layer(layer_id) else MLP(c.hidden_size, c.intermediate_size)

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class MTP(nn.Module):
    """The one MTP module; it shares the main model's embedding and output head (DeepSeek-V3 §2.2)."""

    def __init__(self, c):
        super().__init__()
        self.enorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.hnorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.eh_proj = nn.Linear(2 * c.hidden_size, c.hidden_size, bias=False)
        self.block = Block(c, c.num_hidden_layers)
        self.shared_head_norm = RMSNorm(c.hidden_size, c.rms_norm_eps)

    def forward(self, emb_next, hidden, cos, sin):
        # The embedding first, as vLLM/SGLang (and MoE Mesh) load DeepSeek-V3's eh_proj.
        x = self.eh_proj(torch.cat([self.enorm(emb_next), self.hnorm(hidden)], dim=-1))
        return self.shared_head_norm(self.block(x, cos, sin))


class DeepseekV3(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
        self.layers = nn.ModuleList(Block(c, i) for i in range(c.num_hidden_layers))
        self.norm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.lm_head = nn.Linear(c.hidden_size, c.vocab_size, bias=False)
        self.mtp = MTP(c) if c.num_nextn_predict_layers > 0 else None
        self.register_buffer("freqs", rope_frequencies(c), persistent=False)
        self.init_weights()

    def init_weights(self, std=0.02):
        out_std = std / math.sqrt(2 * (self.c.num_hidden_layers + 1))  # residual writers: the stream grows gently
        for name, p in self.named_parameters():
            if name.endswith("norm.weight"):
                continue
            nn.init.normal_(p, 0.0, out_std if name.endswith(("o_proj.weight", "down_proj.weight", "down_proj")) else std)

    def rope(self, T):
        angles = torch.outer(torch.arange(T, dtype=torch.float32), self.freqs)  # int positions × float32 freqs
        return angles.cos(), angles.sin()

    def forward(self, tokens, next_tokens=None):
        """Main logits (B, T, V) and final-normed hidden; with next_tokens (t_{i+1}), the MTP logits for t_{i+2}."""
        cos, sin = self.rope(tokens.shape[1])
        h = self.embed_tokens(tokens)
        for layer in self.layers:
            h = layer(h, cos, sin)
        hidden = self.norm(h)
        logits = self.lm_head(hidden)
        mtp_logits = None
        if next_tokens is not None and self.mtp is not None:
            mtp_logits = self.lm_head(self.mtp(self.embed_tokens(next_tokens), hidden, cos, sin))
        return logits, mtp_logits

    def moe_layers(self):
        return [m for m in self.modules() if isinstance(m, MoE)]
