"""Templates render items verbatim, keep every variable's span, and are checked as data."""

import re

import pytest

from ips.config import ConfigError, dataset_settings, validate
from ips.prompts.datasets import load_items
from ips.prompts.items import InstructionItem, MCQItem
from ips.prompts.samples import prepare_samples
from ips.prompts.templates import (
    Condition,
    Perturbation,
    TemplateError,
    conditions,
    dataset_conditions,
    load_perturbations,
    load_templates,
    perturb,
    render,
)
from ips.prompts.variables import select_variables
from reference import template_pairs

ITEM = MCQItem("q1", "Which gas do green plants absorb?", ("oxygen", "carbon dioxide", "helium", "neon"), 1)
SHOT = MCQItem("s1", "What is frozen water called?", ("steam", "ice", "fog", "dew"), 1)
DOLLY = InstructionItem("d1", "Name three rivers in Western Europe.", "", "Rhine, Seine, Loire.", "open_qa")


@pytest.fixture(scope="module")
def ts():
    return load_templates()


def test_t1_renders_the_specs_format(ts):
    p = render(ts["T1"], ITEM, select_variables(ITEM))
    assert p.text == (
        "Question: Which gas do green plants absorb?\nAnswers:\n"
        "A. oxygen\nB. carbon dioxide\nC. helium\nD. neon\nAnswer:"
    )
    assert p.cue == "Answer:"


def test_t4_few_shot_matches_appendix_e6_layout(ts):
    p = render(ts["T4"], ITEM, select_variables(ITEM), shots=[SHOT], templates=ts)
    assert p.text == (
        "Question: What is frozen water called?\nANSWERS::\nA. steam\nB. ice\nC. fog\nD. dew\n"
        "ANSWER:: B\n\n"
        "Question: Which gas do green plants absorb?\nANSWERS::\n"
        "A. oxygen\nB. carbon dioxide\nC. helium\nD. neon\nANSWER::"
    )


@pytest.mark.parametrize("name", ["T1", "T2", "T3", "T4", "T5"])
@pytest.mark.parametrize("shots", [0, 2])
def test_every_span_holds_its_variable(ts, name, shots):
    items = load_items("arc", {"format": "arc", "subset": "ARC-Easy"}).items[:40]
    for item in items:
        variables = select_variables(item, strategy="all", n_max=200)
        p = render(ts[name], item, variables, shots=items[-shots:] if shots else (), templates=ts)
        assert [p.text[a:b] for a, b in p.spans] == [v.text for v in variables]
        assert p.text.endswith(ts[name].cue)
        # the prompt contains the item's texts in field order, the shots before them
        assert p.spans == tuple(sorted(p.spans))


def test_instruction_templates_use_the_context_form_only_with_context(ts):
    with_ctx = InstructionItem("d2", "Summarise the note.", "The Library opens at ten.", "Opens at ten.", "summarization")
    for name in ("A1", "A2", "A3", "A4"):
        plain = render(ts[name], DOLLY, select_variables(DOLLY))
        assert "Input" not in plain.text.replace("INPUT", "Input") and plain.text.endswith(ts[name].cue)
        ctx = render(ts[name], with_ctx, select_variables(with_ctx))
        assert "The Library opens at ten." in ctx.text
        assert [ctx.text[a:b] for a, b in ctx.spans] == [v.text for v in select_variables(with_ctx)]


def test_pair_labels_follow_appendix_g(ts):
    assert ts.pair_label("T1", "T2") == "altering"  # Answers -> ANSWERS
    assert ts.pair_label("T1", "T3") == "adding"  # : -> ::
    assert ts.pair_label("T1", "T5") == "adding"  # A. -> A)
    assert ts.pair_label("T2", "T4") == "adding"
    assert ts.pair_label("T1", "T4") == "mixed"
    assert ts.pair_label("T3", "T5") == "adding"
    assert ts.pair_label("A1", "A2") == "altering"


def test_conditions_and_groups():
    conds, groups = conditions(["T1", "T2", "T3"], ["T1", "T3"], [1, 2])
    assert [c.name for c in conds] == ["T1", "T2", "T3", "T1-1shot", "T3-1shot", "T1-2shot", "T3-2shot"]
    assert groups == {"0shot": ["T1", "T2", "T3"], "1shot": ["T1-1shot", "T3-1shot"],
                      "2shot": ["T1-2shot", "T3-2shot"]}
    conds, groups = conditions(["A1", "A2"], perturbations=["paraphrase"])
    assert groups["perturbation"] == ["A1", "A1-paraphrase"]
    assert conds[-1].perturbation == "paraphrase" and conds[-1].template == "A1"
    assert template_pairs(groups["0shot"]) == [("A1", "A2")]


def test_reworded_prompts_at_k_shots_are_groups_of_their_own():
    """`perturbations.shots` (Figs. 12d, 55): `perturbation-{k}shot` is the first template and
    its rewordings with k examples; `{base}-{k}shot` is the k-shot template condition where
    there is one (never twice), else a condition of its own."""
    conds, groups = conditions(["A1", "A2", "A3"], ["A1", "A3"], [1, 2],
                               ["paraphrase", "reorder"], [1, 2])
    assert [c.name for c in conds] == [
        "A1", "A2", "A3", "A1-1shot", "A3-1shot", "A1-2shot", "A3-2shot", "A1-paraphrase",
        "A1-reorder", "A1-paraphrase-1shot", "A1-reorder-1shot", "A1-paraphrase-2shot",
        "A1-reorder-2shot"]
    assert groups == {
        "0shot": ["A1", "A2", "A3"], "1shot": ["A1-1shot", "A3-1shot"],
        "2shot": ["A1-2shot", "A3-2shot"], "perturbation": ["A1", "A1-paraphrase", "A1-reorder"],
        "perturbation-1shot": ["A1-1shot", "A1-paraphrase-1shot", "A1-reorder-1shot"],
        "perturbation-2shot": ["A1-2shot", "A1-paraphrase-2shot", "A1-reorder-2shot"]}
    assert conds[-1] == Condition("A1-reorder-2shot", "A1", 2, "reorder")
    # the first template is no few-shot template: its k-shot condition comes with the group
    conds, groups = conditions(["A1", "A2"], ["A2"], [1, 2], ["paraphrase"], [2])
    assert [c.name for c in conds[:4]] == ["A1", "A2", "A2-1shot", "A2-2shot"]
    assert conds[4:] == [Condition("A1-paraphrase", "A1", 0, "paraphrase"),
                         Condition("A1-2shot", "A1", 2), Condition("A1-paraphrase-2shot", "A1",
                                                                   2, "paraphrase")]
    assert groups["perturbation-2shot"] == ["A1-2shot", "A1-paraphrase-2shot"]
    assert "perturbation-1shot" not in groups
    # an MCQ dataset has no rewordings, at 0 shots or at k
    kinds = {"mcq": ["T1", "T2"], "instruction": ["A1", "A2"]}
    pert = {"names": ["paraphrase"], "shots": [1]}
    few = {"templates": ["T1", "A2"], "shots": [1]}
    assert set(dataset_conditions("mcq", kinds, few, pert)[1]) == {"0shot", "1shot"}
    assert set(dataset_conditions("instruction", kinds, few, pert)[1]) == {
        "0shot", "1shot", "perturbation", "perturbation-1shot"}
    # settings written before perturbations.shots existed have none
    assert set(dataset_conditions("instruction", kinds, few, {"names": ["paraphrase"]})[1]) == {
        "0shot", "1shot", "perturbation"}


def write(tmp_path, text):
    path = tmp_path / "t.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "body, message",
    [
        ('mcq:\n  templates:\n    X:\n      format: "Q: {question} {foo}\\n{options}A:"\n'
         '      option: "{letter}. {choice}\\n"\n      cue: "A:"\n', "unknown template field(s) ['foo']"),
        ('mcq:\n  templates:\n    X:\n      format: "Q: {question}\\nA:"\n'
         '      option: "{letter}. {choice}\\n"\n      cue: "A:"\n', "{options} must occur 1 time(s), found 0"),
        ('mcq:\n  templates:\n    X:\n      format: "Q: {question} {question}\\n{options}A:"\n'
         '      option: "{letter}. {choice}"\n      cue: "A:"\n', "{question} must occur 1 time(s), found 2"),
        ('mcq:\n  templates:\n    X:\n      format: "Q:\\n{options}A:"\n'
         '      option: "{letter}. {choice}"\n      cue: "A:"\n', "{question} must occur 1 time(s), found 0"),
        ('mcq:\n  templates:\n    X:\n      format: "Q: {question}\\n{options}A: "\n'
         '      option: "{letter}. {choice}"\n      cue: "A:"\n', "does not end with its cue"),
        ('mcq:\n  templates:\n    X:\n      format: "Q: {question}\\n{options}A:"\n'
         '      option: "{choice}"\n      cue: "A:"\n', "{letter} must occur 1 time(s)"),
        ('instruction:\n  templates:\n    X:\n      format: "{instruction}\\n{context}\\nR:"\n'
         '      format_no_context: "{instruction} {context}\\nR:"\n      cue: "R:"\n', "{context} must occur 0 time(s), found 1"),
        ('mcq:\n  templates:\n    X:\n      format: "Q: {question}\\n{options}A:"\n'
         '      option: "{letter}. {choice}\\n"\n      cue: "Answer:"\n', "does not end with its cue"),
        ('mcq:\n  templates:\n    X:\n      format: "Q: {question}\\n{options}A:"\n'
         '      cue: "A:"\n', "missing field 'option'"),
        ('mcq:\n  templates:\n    X:\n      format: "Q: {question}\\n{options}A:"\n'
         '      option: "{letter}. {choice}\\n"\n      cue: "A:"\n      changes: [colour]\n',
         "not in change_kinds"),
        ('mcq:\n  templates:\n    X:\n      option: "{letter}"\n      cue: "A:"\n', "missing or empty field 'format'"),
    ],
)
def test_bad_template_files_name_the_problem(tmp_path, body, message):
    with pytest.raises(TemplateError, match=None) as e:
        load_templates(write(tmp_path, body))
    assert message in str(e.value) and ".templates.X" in str(e.value)


def test_unknown_template_and_wrong_kind(ts):
    with pytest.raises(TemplateError, match="unknown template 'T9'"):
        ts["T9"]
    with pytest.raises(TemplateError, match="for instruction items"):
        render(ts["A1"], ITEM, [])
    with pytest.raises(TemplateError, match="no such template file"):
        load_templates("/nonexistent/templates.yaml")


def _instruction_units(item):
    """The variables the dolly config selects: content units of the instruction (no cap)."""
    return select_variables(item, strategy="content", merge_phrases=True, n_max=64,
                            fields=["instruction"])


def test_shipped_perturbations_relocate_every_variable(ts):
    items = {i.id: i for i in load_items("dolly", {"format": "dolly"}).items}
    shipped = load_perturbations()
    assert set(shipped) == set(items)  # every bundled record can run the perturbation group
    for item_id, entries in shipped.items():
        item = items[item_id]
        variables = _instruction_units(item)
        assert set(entries) == {"paraphrase", "reorder"}
        for p in entries.values():
            fields, moved = perturb(item, variables, p)
            assert set(p.fields) == {"instruction"} and fields["context"] == item.context
            assert set(p.variables) <= {v.text for v in variables}  # no stale mapping
            prompt = render(ts["A1"], item, moved, fields=fields)
            assert fields["instruction"] in prompt.text and item.instruction not in prompt.text
            assert [prompt.text[a:b] for a, b in prompt.spans] == [
                p.variables.get(v.text, v.text) for v in variables
            ]
            # distinct variables land on disjoint stretches of the new wording
            spans = sorted((v.start, v.end) for v in moved)
            assert all(e <= s for (_, e), (s, _) in zip(spans, spans[1:]))
            if p.name == "reorder":  # same words, other order: case changes only
                assert all(old.lower() == new.lower() for old, new in p.variables.items())
                assert [v.start for v in moved] != sorted(v.start for v in moved)
            else:  # a paraphrase rewords at least one variable
                assert any(old.lower() != new.lower() for old, new in p.variables.items())
            # a capped selection (the longest units) relocates to the same places
            longest = sorted(variables, key=lambda v: -len(v.text))[: len(variables) // 2]
            assert perturb(item, longest, p)[1] == [moved[variables.index(v)] for v in longest]
            # the check bites: a variable cut out of the new wording is reported by name
            for var, at in zip(variables, moved):
                cut = fields["instruction"][: at.start] + "zzz" + fields["instruction"][at.end :]
                broken = Perturbation(p.name, item_id, {"instruction": cut}, p.variables)
                with pytest.raises(TemplateError, match=f"{re.escape(repr(var.text))}.*does not occur"):
                    perturb(item, variables, broken)


def test_all_bundled_dolly_records_render_with_perturbations():
    config = {
        "datasets": {"dolly": {"format": "dolly", "fields": ["instruction"], "n_items": 20}},
        "n_max": 16,
        "templates": {"instruction": ["A1"]},
        "perturbations": {"names": ["paraphrase", "reorder"]},
    }
    ss = prepare_samples(dataset_settings(validate(config), "dolly"))
    assert ss.skipped == {} and ss.n_considered == 20
    assert sorted(s.item.id for s in ss.samples) == [f"dolly-{k:03d}" for k in range(20)]
    shipped = load_perturbations()
    for s in ss.samples:
        assert s.variables == _instruction_units(s.item)
        assert set(s.prompts) == {"A1", "A1-paraphrase", "A1-reorder"}
        assert s.item.instruction in s.prompts["A1"].text
        for name in ("paraphrase", "reorder"):
            prompt = s.prompts[f"A1-{name}"]
            assert shipped[s.item.id][name].fields["instruction"] in prompt.text
            assert len(prompt.spans) == len(s.variables)


def test_repeated_variable_text_is_refused_by_name():
    item = InstructionItem("d4", "Is a tomato a fruit or a vegetable, and is a tomato sweet?", "",
                           "A fruit.", "open_qa")
    variables = select_variables(item, merge_phrases=False)
    assert [v.text for v in variables].count("tomato") == 2
    p = Perturbation("reorder", "d4", {"instruction": "Is a tomato sweet, and is a tomato a fruit "
                                                     "or a vegetable?"}, {})
    with pytest.raises(TemplateError, match="'tomato' occurs 2 times in the instruction"):
        perturb(item, variables, p)


def test_perturbation_errors_name_item_and_variable():
    item = InstructionItem("d3", "Describe the sunset over Lake Tahoe.", "", "Orange.", "open_qa")
    variables = select_variables(item)  # Describe, sunset, Lake Tahoe
    missing = Perturbation("paraphrase", "d3", {"instruction": "Tell me about dusk at Lake Tahoe."}, {})
    with pytest.raises(TemplateError, match="'Describe'.*does not occur"):
        perturb(item, variables, missing)
    # "set" inside "sunset" does not count as an occurrence of the word
    inner = Perturbation("reorder", "d3", {"instruction": "Over Lake Tahoe, describe the sunset."},
                         {"Describe": "describe", "sunset": "set"})
    with pytest.raises(TemplateError, match="'sunset' → 'set' does not occur"):
        perturb(item, variables, inner)
    twice = Perturbation("reorder", "d3", {"instruction": "describe the sunset, describe Lake Tahoe."},
                         {"Describe": "describe"})
    with pytest.raises(TemplateError, match="occurs more than once"):
        perturb(item, variables, twice)
    unknown = Perturbation("reorder", "d3", {"question": "x"}, {})
    with pytest.raises(TemplateError, match="unknown field"):
        perturb(item, variables, unknown)


def test_few_shot_templates_of_each_kind_go_to_datasets_of_that_kind():
    """`few_shot.templates` may name templates of both kinds (Fig. 12d: few-shot on Dolly): an
    instruction dataset gets k-shot conditions of its own templates, the solved examples
    written as instruction then response and drawn outside the evaluated items; an MCQ
    dataset keeps its own."""
    config = validate({
        "datasets": {"dolly": {"format": "dolly", "fields": ["instruction"], "n_items": 5},
                     "arc": {"format": "arc", "subset": "ARC-Easy", "fields": ["question"],
                             "n_items": 2}},
        "n_max": 16,
        "templates": {"instruction": ["A1", "A2", "A3"], "mcq": ["T1", "T2", "T4"]},
        "few_shot": {"templates": ["T1", "T4", "A1", "A3"], "shots": [1, 2]},
    })
    dolly = prepare_samples(dataset_settings(config, "dolly"))
    assert dolly.groups == {"0shot": ["A1", "A2", "A3"], "1shot": ["A1-1shot", "A3-1shot"],
                            "2shot": ["A1-2shot", "A3-2shot"]}
    assert len(dolly.shots) == 2 and all(isinstance(i, InstructionItem) for i in dolly.shots)
    assert not {i.id for i in dolly.shots} & {s.item.id for s in dolly.samples}
    ts = load_templates()
    for s in dolly.samples:
        two = s.prompts["A3-2shot"].text
        first = render(ts["A3"], dolly.shots[0], []).text + dolly.shots[0].response
        assert two.startswith(first + "\n\n")
        assert two.endswith(s.prompts["A3"].text)
    arc = prepare_samples(dataset_settings(config, "arc"))
    assert arc.groups["1shot"] == ["T1-1shot", "T4-1shot"]
    # the MCQ templates alone: no few-shot for Dolly, as before
    mcq_only = validate({**config, "few_shot": {"templates": ["T1", "T4"], "shots": [1]}})
    assert set(prepare_samples(dataset_settings(mcq_only, "dolly")).groups) == {"0shot"}


def test_the_papers_e6_examples_as_the_few_shot_choice():
    """`few_shot.examples: paper`: Appendix E.6's three ARC examples, in its order, written as
    E.6 prints Example 1 under T1 and T4; k-shot uses the first k; more than 3 shots is one
    line naming the field."""
    config = validate({
        "datasets": {"arc": {"format": "arc", "subset": "ARC-Easy", "fields": ["question"],
                             "n_items": 3}},
        "n_max": 6, "templates": {"mcq": ["T1", "T4"]},
        "few_shot": {"templates": ["T1", "T4"], "shots": [1, 3], "examples": "paper"},
    })
    ss = prepare_samples(dataset_settings(config, "arc"))
    assert [i.id for i in ss.shots] == ["e6-1", "e6-2", "e6-3"]
    example_1 = {
        "T1": "Question: Which type of precipitation consists of frozen raindrops?\nAnswers:\n"
              "A. sleet\nB. hail\nC. snow\nD. fog\nAnswer: A\n\n",
        "T4": "Question: Which type of precipitation consists of frozen raindrops?\nANSWERS::\n"
              "A. sleet\nB. hail\nC. snow\nD. fog\nANSWER:: A\n\n"}
    for s in ss.samples:
        for t, text in example_1.items():
            one, three = s.prompts[f"{t}-1shot"].text, s.prompts[f"{t}-3shot"].text
            assert one == text + s.prompts[t].text
            assert three.startswith(text) and "Decayed prehistoric plants" in three
            assert three.index("Decayed") < three.index("not a food") < three.index(
                s.item.question)
            assert "ANSWER:: B" in three if t == "T4" else "Answer: B\n\n" in three
    drawn = prepare_samples(dataset_settings(
        validate({**config, "few_shot": {**config["few_shot"], "examples": "drawn"}}), "arc"))
    assert not {i.id for i in drawn.shots} & {"e6-1", "e6-2", "e6-3"}
    with pytest.raises(ConfigError, match=r"few_shot.shots: 4 shots, but few_shot.examples: "
                                          r"paper has Appendix E.6's 3"):
        validate({**config, "few_shot": {**config["few_shot"], "shots": [4]}})
