"""The items of a dataset: multiple-choice (`MCQItem`) and instruction items."""

from __future__ import annotations

from dataclasses import dataclass

from ips.errors import InputError

LETTERS = "ABCDEFGHIJ"


N_CHOICES = 4  # every MCQ template has exactly the options A-D


def letter(index: int, none: str = "?") -> str:
    """The option letter of a 0-based index (`none` for −1, "no prediction", or out of range)."""
    return LETTERS[index] if 0 <= index < len(LETTERS) else none


@dataclass(frozen=True)
class MCQItem:
    """A multiple-choice question; `gold` indexes `choices` (0 is option A)."""

    id: str
    question: str
    choices: tuple[str, ...]
    gold: int
    subject: str = ""

    kind = "mcq"
    #: the keys of `fields()` of a usable item (exactly N_CHOICES options)
    field_names = ("question", *(f"choice_{i}" for i in range(N_CHOICES)))

    def fields(self) -> dict[str, str]:
        return {"question": self.question} | {
            f"choice_{i}": c for i, c in enumerate(self.choices)
        }

    @property
    def gold_letter(self) -> str:
        return LETTERS[self.gold]


@dataclass(frozen=True)
class InstructionItem:
    """An open-ended instruction in the Dolly-15k schema."""

    id: str
    instruction: str
    context: str
    response: str
    category: str

    kind = "instruction"
    #: the keys of `fields()`
    field_names = ("instruction", "context")

    def fields(self) -> dict[str, str]:
        return dict(zip(self.field_names, (self.instruction, self.context)))


Item = MCQItem | InstructionItem


#: the item type of each format: its `kind` and `field_names` hold for every item it loads
ITEM_TYPES: dict[str, type[MCQItem] | type[InstructionItem]] = {
    "arc": MCQItem, "mmlu": MCQItem, "mcq": MCQItem, "dolly": InstructionItem,
}


FORMATS = tuple(ITEM_TYPES)


class DatasetError(InputError):
    """A dataset that cannot be loaded as configured.

    The message names the dataset, the file/field/record at fault and what to do; being an
    `InputError`, the CLI reports it without a traceback and exits with code 2.
    """
