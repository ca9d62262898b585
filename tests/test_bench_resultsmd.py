"""One splice for benchmark sections of RESULTS.md: replace in place, append, keep the rest verbatim."""
from benchmarks.resultsmd import replace_section


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
