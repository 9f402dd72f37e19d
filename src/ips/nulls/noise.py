"""The noise null: unstructured noise on every value of a game, refitted (`nulls.noise`).

It costs fits only; `ips metrics` computes it (`ips.analysis.nulls`, docs/method.md#nulls).
"""

from __future__ import annotations

from ips.nulls.base import Null


class Noise(Null):
    """Gaussian noise of given sizes, and of the size of each template pair's own change."""

    kind = "noise"
    description = ("Null IPS beside every IPS from fits alone (ips.analysis.nulls, "
                   "docs/method.md#nulls): Gaussian noise on every value of a game, refitted "
                   "and scored against its own fit as a template pair.")
    settings = {
        "levels": {
            "description": "Gaussian null levels c: every value of a game moves by c * (max v "
                           "- min v) * N(0, 1), the game is refitted and scored against its own "
                           "fit as a template pair.",
            "type": "array", "minItems": 1, "uniqueItems": True,
            "items": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
            "default": [0.003, 0.01, 0.03]},
        "draws": {
            "description": "Noise draws per game and level (and per side of a pair); 0 "
                           "computes no null.",
            "type": "integer", "minimum": 0, "default": 1},
        "matched": {
            "description": "The matched-size null of every template pair: each side moved by "
                           "unstructured noise of the size of the pair's own change sd(v_b - "
                           "v_a).",
            "type": "boolean", "default": True},
    }
