"""One splice for benchmark sections of RESULTS.md: replace in place, append, keep the rest verbatim;
one percentile definition for every section."""
import math

from benchmarks.resultsmd import percentile, replace_section, splice_section, split_top


def test_a_section_is_replaced_between_its_neighbours(tmp_path):
    path = tmp_path / "RESULTS.md"
    path.write_text("# Benchmark results\n\n## A\n\nold a\n## Mine\n\nold\n\n## B\n\nb text\n")
    replace_section(path, "## Mine", "## Mine\n\nnew\n")
    assert path.read_text() == "# Benchmark results\n\n## A\n\nold a\n\n## Mine\n\nnew\n\n## B\n\nb text\n"


def test_a_missing_section_is_appended_and_a_missing_file_created(tmp_path):
    path = tmp_path / "RESULTS.md"
    replace_section(path, "## Mine", "## Mine\n\nfirst\n")
    assert path.read_text() == "# Benchmark results\n\n## Mine\n\nfirst\n"
    replace_section(path, "## Other", "## Other\n\nx\n")
    replace_section(path, "## Mine", "## Mine\n\nsecond\n")
    assert path.read_text() == "# Benchmark results\n\n## Mine\n\nsecond\n\n## Other\n\nx\n"


def test_a_heading_that_only_starts_the_same_is_not_taken(tmp_path):
    path = tmp_path / "RESULTS.md"
    path.write_text("# Benchmark results\n\n## Mine too\n\nkeep\n")
    replace_section(path, "## Mine", "## Mine\n\nnew\n")
    assert path.read_text() == "# Benchmark results\n\n## Mine too\n\nkeep\n\n## Mine\n\nnew\n"


def test_a_heading_inside_a_code_block_neither_ends_nor_starts_a_section():
    content = "# T\n\n## Mine\n\nold\n```\n## Other\n```\n\n## B\n\nb\n"
    assert splice_section(content, "## Mine", "## Mine\n\nnew\n") == "# T\n\n## Mine\n\nnew\n\n## B\n\nb\n"
    assert splice_section("# T\n\n```\n## Mine\n```\n", "## Mine", "## Mine\n\nx\n") == (
        "# T\n\n```\n## Mine\n```\n\n## Mine\n\nx\n")


def test_a_missing_section_can_go_first_and_the_top_text_is_split_off():
    assert splice_section("## B\n\nb\n", "## Mine", "## Mine\n\nm\n", first_if_missing=True) == (
        "## Mine\n\nm\n\n## B\n\nb\n")
    assert split_top("# T\n\ntop\n\n## A\n\na\n") == ("# T\n\ntop\n\n", "## A\n\na\n")
    assert split_top("# T\n") == ("# T\n", "")


def test_percentiles_interpolate_linearly_between_ranks():
    # Worked by hand: rank q/100 * (n - 1), interpolated between its two neighbours.
    assert percentile([10.0, 20.0], 50) == 15.0
    assert math.isclose(percentile([10.0, 20.0], 99), 19.9)
    assert percentile([4, 1, 3, 2, 5], 50) == 3.0
    assert percentile([4, 1, 3, 2, 5], 90) == 4.6
    assert percentile(range(101), 99) == 99.0
    assert math.isnan(percentile([], 50))
