"""Every code block of README.md and docs/**/*.md runs (see tests/docs_blocks.py).

One test per block, named by its page and line (``tests/test_docs.py::test_block[
docs/tutorials/first-scenario.md:42]``). A page's blocks run in order in one folder and
namespace; a block selected alone (``-k``) first runs the blocks before it on its page.
Blocks marked ``<!-- docs-test: slow -->`` run with ``-m slow``; the session ends with a
line counting the blocks executed.
"""

from __future__ import annotations

import pytest

from tests import docs_blocks
from tests.docs_blocks import TALLY_KEY, Block, PageState, Tally

BLOCKS = docs_blocks.all_blocks()
EXECUTABLE = [b for b in BLOCKS if b.executable or b.problem]
BY_PAGE: dict[str, list[Block]] = {}
for _block in EXECUTABLE:
    BY_PAGE.setdefault(_block.page, []).append(_block)

#: The docs must keep at least this many blocks that run (a guard against a runner that
#: silently finds nothing, e.g. after a change of fence style).
MINIMUM_BLOCKS = 80

STATES_KEY = pytest.StashKey[dict[str, PageState]]()


def _param(block: Block) -> object:
    marks = []
    if block.skip_reason:
        marks.append(pytest.mark.skip(reason=f"{block.id}: {block.skip_reason}"))
    if block.slow:
        marks.append(pytest.mark.slow)
    return pytest.param(block, id=block.id, marks=marks)


def tally(config: pytest.Config) -> Tally:
    if TALLY_KEY not in config.stash:
        config.stash[TALLY_KEY] = Tally(
            skipped=sum(1 for b in EXECUTABLE if b.skip_reason),
            slow=sum(1 for b in EXECUTABLE if b.slow and not b.skip_reason),
        )
    return config.stash[TALLY_KEY]


def _selected(request: pytest.FixtureRequest) -> set[str]:
    """The blocks this session runs (after -m and -k)."""
    return {
        item.callspec.params["block"].id
        for item in request.session.items
        if hasattr(item, "callspec") and isinstance(item.callspec.params.get("block"), Block)
    }


def _state(request: pytest.FixtureRequest, page: str) -> PageState:
    config = request.config
    if STATES_KEY not in config.stash:
        config.stash[STATES_KEY] = {}
    states = config.stash[STATES_KEY]
    if page not in states:
        base = request.getfixturevalue("tmp_path_factory").mktemp(
            page.replace("/", "-").removesuffix(".md")
        )
        states[page] = PageState.create(page, base)
    return states[page]


@pytest.mark.parametrize("block", [_param(b) for b in EXECUTABLE])
def test_block(block: Block, request: pytest.FixtureRequest) -> None:
    state = _state(request, block.page)
    blocks = BY_PAGE[block.page]
    index = blocks.index(block)
    selected = _selected(request)
    record = tally(request.config)
    # Catch up on the page's earlier blocks this session has not run (selected alone).
    while state.done < index:
        earlier = blocks[state.done]
        state.done += 1
        if earlier.skip_reason or (earlier.slow and earlier.id not in selected):
            continue
        problem = _attempt(earlier, state, record)
        if problem:
            pytest.fail(f"an earlier block of this page failed: {problem}", pytrace=False)
    state.done = max(state.done, index + 1)
    problem = _attempt(block, state, record)
    if problem:
        pytest.fail(problem, pytrace=False)


def _attempt(block: Block, state: PageState, record: Tally) -> str:
    """Run ``block``; what went wrong, or "" (a docs problem fails its test without a
    traceback into the runner; any other exception propagates with its own)."""
    try:
        record.ran[docs_blocks.run_block(block, state)] += 1
    except docs_blocks.DocsBlockError as exc:
        record.failed.append(block.id)
        return str(exc)
    if block.slow:
        record.slow_ran.add(block.id)
    return ""


def test_docs_have_blocks_that_run() -> None:
    """The runner finds the pages' blocks: at least MINIMUM_BLOCKS that run, every marker
    well formed (a malformed one fails its block's test too)."""
    runnable = [b for b in EXECUTABLE if not b.skip_reason]
    assert len(runnable) >= MINIMUM_BLOCKS, (
        f"only {len(runnable)} runnable code blocks found in README.md and docs/"
    )
    problems = [f"{b.id}: {b.problem}" for b in BLOCKS if b.problem]
    assert not problems, "\n".join(problems)


def test_marker_parsing() -> None:
    """The directives a page writes before a block, and the substitutions they make."""
    import textwrap

    text = textwrap.dedent(
        """\
        <!-- docs-test: slow; set trials=1000 -->
        ```bash
        privsim audit x.toml --trials 1000000 --out results
        ```

        <!-- docs-test: skip needs a Dask cluster -->
            privsim sweep s.toml --scheduler tls://host:8786

        ```console
        $ privsim run \\
        >   --seed 3
        Result      released
        ```

        <!-- docs-test: skip -->
        ```python
        x = 1
        ```
        """
    )
    found = docs_blocks.blocks_in(text, "docs/example.md")
    audit, sweep, console, bad = found
    assert audit.slow and docs_blocks.substituted(audit).split()[4] == "1000"
    assert sweep.lang == "shell" and sweep.skip_reason == "needs a Dask cluster"
    assert console.console
    assert docs_blocks.console_commands(console.source) == [
        ("privsim run \\\n  --seed 3", ["Result      released"])
    ]
    assert "needs its reason" in bad.problem


def test_output_matching_and_quotes(tmp_path) -> None:
    """Shown output matches with numbers and folders as wildcards, in order, and fails
    naming the line otherwise; a titled block must quote its file."""
    block = docs_blocks.blocks_in("```console\n$ privsim run\n```\n", "docs/example.md")[0]
    shown = ["Result      released: sum of 1844 of 2000 clients", "...", "Time  wall 1.21 s"]
    printed = "header\nResult released: sum of 1790 of 2000 clients\nx\nTime wall 0.5 s\n"
    docs_blocks.match_output(block, shown, printed)
    docs_blocks.match_output(block, ["wrote /home/me/golden/my.json"], "wrote /tmp/x/y/my.json")
    with pytest.raises(docs_blocks.DocsBlockError, match="does not print"):
        docs_blocks.match_output(block, ["Result      aborted"], printed)
    with pytest.raises(docs_blocks.DocsBlockError, match="does not print"):  # order counts
        docs_blocks.match_output(block, shown[2:] + shown[:1], printed)

    quoted = docs_blocks.blocks_in(
        '```python title="tests/docs_blocks.py"\nclass DocsBlockError(AssertionError):\n'
        "...\ndef pages() -> list[Path]:\n```\n",
        "docs/example.md",
    )[0]
    docs_blocks.check_quote(quoted)
    wrong = docs_blocks.blocks_in(
        '```python title="tests/docs_blocks.py"\ndef pages() -> list[Path]:\n'
        "...\nclass DocsBlockError(AssertionError):\n```\n",
        "docs/example.md",
    )[0]
    with pytest.raises(docs_blocks.DocsBlockError, match=r"not what tests/docs_blocks\.py holds"):
        docs_blocks.check_quote(wrong)
