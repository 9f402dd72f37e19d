"""Argument types of the `ips` command line: each parses one option's text or raises
`argparse.ArgumentTypeError` with the reason (shown by argparse next to the option)."""

from __future__ import annotations

import argparse
import json
import math


def json_arg(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"not valid JSON ({e})") from None


def nonnegative_float(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (math.isfinite(x) and x >= 0):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text}")
    return x


def positive_float(text: str) -> float:
    x = nonnegative_float(text)
    if x == 0:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    return x


def int_between(lo: int, hi: int):
    def parse(text: str) -> int:
        try:
            x = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if not lo <= x <= hi:
            raise argparse.ArgumentTypeError(f"must be in {lo}..{hi}, got {x}")
        return x

    parse.__name__ = f"integer in {lo}..{hi}"
    return parse


def unit(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (math.isfinite(x) and 0 < x < 1):
        raise argparse.ArgumentTypeError(f"must lie in (0, 1), got {text}")
    return x
