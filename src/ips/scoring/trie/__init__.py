"""Shared-prefix (trie) evaluation of the 2**n masked versions of one prompt.

All masked inputs x_S of a prompt agree on every token before the first variable, and two
masks that agree on the variables 1..k (in prompt order) agree on every token before variable
k+1. The masked inputs are therefore the leaves of a binary tree over the variables:

    level 0     the tokens before the first variable (the whole few-shot demonstration
                block included), run once, for 1 node;
    level k     the tokens from variable k up to variable k+1, run for the 2**k nodes that
                fix variables 1..k (the children of node b are 2b, variable k masked, and
                2b+1, kept);
    level m     the last variable up to the end (and the target's first tokens), run for the
                2**m leaves, of which only the answer positions are projected to logits.

Every node's segment is computed once, and its keys/values are stored once, in a per-level
tensor `[kv_heads, nodes, segment, head_dim]` per layer. A row attends to the shared prefix
(one tensor for all rows: one large matmul), to the segments of its ancestors (rows grouped
by ancestor: a batched matmul over views of the stored tensors), and causally to its own
segment; the scores of all levels share one softmax. No cache is replicated per row
(`batch_repeat_interleave` would copy the whole prefix 2**k times per level and
concatenate on every update), no key/value is repeated for grouped-query attention, no mask
is built. The attention runs through transformers' `AttentionInterface` (registered as
"ips_trie", selected only for the duration of a trie forward), so the model's own code
computes embeddings, projections, norms, rotary embeddings (from explicit position ids) and
MLPs; the sliding windows of Gemma 3's local layers are applied here (a key at position j
is seen from position i when i − window < j ≤ i, as in `masking_utils`), so prompts longer
than the window branch like any other.

A forward has a fixed cost (reading every weight; launching kernels) besides its tokens, so
the first, narrow levels may fix several variables at once (`plan_levels`: 2**r children
per node for a level of r variables), where that is cheaper. Breadth is capped by a token
budget: the nodes of a level run in chunks of at most `budget` tokens, depth-first over
subtrees, so memory is bounded by about (levels × budget) stored tokens of keys/values plus
one forward's activations, whatever n.

A model whose attention cannot be evaluated this way (not a transformers model, attention
outside AttentionInterface, bidirectional, linear or chunked attention layers, attention
sinks, a mask it builds itself ...) is detected before use or on its first forward;
`Engine(scorer="auto")` then uses the plain scorer and logs the reason once,
`scorer="trie"` raises `ScoringError`. On its first prompt the trie also checks itself
against the plain scorer on two masks (all kept, none kept), which catches, e.g., an output
head other than `lm_head` (+ Gemma's final soft-capping) that this module reproduces.
The model's attention setting is switched for the trie's forwards only (under a lock), so
the same model must not run plain forwards from another thread meanwhile. A model dispatched
over devices by accelerate runs through its hooks: keys/values stay on each layer's device,
and the output head's weights are taken through the head's hook.

Modules:

* ``plan``       the levels, the token budget
* ``support``    which models it can evaluate
* ``tree``       the stored keys/values and the attention over them
* ``attention``  the function registered with transformers
* ``scorer``     `TrieScorer`: the levels run, v projected
"""

from ips.scoring.trie.attention import ATTENTION
from ips.scoring.trie.plan import MIN_BUDGET, plan_levels, trie_budget
from ips.scoring.trie.scorer import TrieScorer, TrieStats
from ips.scoring.trie.support import TrieUnsupported, unsupported_reason

__all__ = ["ATTENTION", "MIN_BUDGET", "TrieScorer", "TrieStats", "TrieUnsupported",
           "plan_levels", "trie_budget", "unsupported_reason"]
