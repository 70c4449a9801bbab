"""Every shipped skill has the Agent Skills front matter and a short body (docs/skills.md)."""

from __future__ import annotations

import pytest

from osmosis_cli.scaffolding.skills import (
    MAX_BODY_LINES,
    front_matter_problems,
    shipped_skills,
    skills_source,
    split_front_matter,
)


def test_every_skill_has_valid_front_matter_and_a_short_body() -> None:
    folders = sorted(p for p in skills_source().iterdir() if p.is_dir())
    assert folders, f"no skills under {skills_source()}"
    problems = []
    for folder in folders:
        skill_md = folder / "SKILL.md"
        if not skill_md.is_file():
            problems.append(f"{folder}: no SKILL.md")
            continue
        text = skill_md.read_text(encoding="utf-8")
        problems += [f"{skill_md}: {p}" for p in front_matter_problems(folder.name, text)]
    assert problems == [], "\n".join(problems)
    assert set(shipped_skills()) == {f.name for f in folders}


GOOD = "---\nname: plan-eval\ndescription: Plan an eval (rows, metric, budget).\n---\n# Body\n"


@pytest.mark.parametrize(
    ("folder", "text", "expected"),
    [
        ("plan-eval", GOOD, []),
        ("plan-eval", "# no front matter\n", ["SKILL.md must start with '---'"]),
        ("other", GOOD, ["name 'plan-eval' differs from its folder 'other'"]),
        (
            "Plan_Eval",
            GOOD.replace("plan-eval", "Plan_Eval"),
            ["name 'Plan_Eval' must be lower-case letters, digits and single hyphens"],
        ),
        (
            "plan-eval",
            "---\nname: plan-eval\n---\n",
            ["front matter has no 'description'"],
        ),
        (
            "plan-eval",
            f"---\nname: plan-eval\ndescription: {'x' * 1025}\n---\n",
            ["description is 1025 characters (at most 1024)"],
        ),
        (
            "plan-eval",
            GOOD + "line\n" * MAX_BODY_LINES,
            [f"body is {MAX_BODY_LINES + 1} lines (at most {MAX_BODY_LINES})"],
        ),
        (
            "plan-eval",
            "---\nname: plan-eval\ndescription: Plan it: rows\n---\n",
            ["front matter value of 'description' needs quotes (it contains ': '"],
        ),
        ("a" * 65, GOOD.replace("plan-eval", "a" * 65), ["name is 65 characters (at most 64)"]),
    ],
)
def test_front_matter_problems_say_what_is_wrong(
    folder: str, text: str, expected: list[str]
) -> None:
    problems = front_matter_problems(folder, text)
    assert len(problems) == len(expected), problems
    for problem, start in zip(problems, expected, strict=True):
        assert problem.startswith(start), problem


def test_folded_and_quoted_descriptions() -> None:
    meta, body, line = split_front_matter(
        "---\nname: x\ndescription: >\n  Two\n  lines.\nlicense: 'it''s'\n---\nbody\n"
    )
    assert meta == {"name": "x", "description": "Two lines.", "license": "it's"}
    assert (body, line) == ("body", 8)
