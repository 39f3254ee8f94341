"""The run's results: the table's rows, the lines printed under it, the notes and the failed
checks. One `Results` is made by bench/run.py and handed to every section, which adds to it;
the driver prints it as one table and writes it to build/bench-results.json."""

import os


class Results:
    """rows: (section, figure, ours, baseline, ratio text, target text); details: lines
    printed under the table as they are (durability of each side, the machine's limit);
    notes: what a reader should know about a figure; failed_checks: checks of the bench
    itself, which make the run exit 1."""

    def __init__(self):
        self.rows = []
        self.details = []
        self.notes = []
        self.failed_checks = []

    def add(self, section, figure, ours, baseline, unit, digits=1, ratio=None, at_most=None, at_most_ratio=None,
            at_least_ratio=None):
        """One row. `at_most` (in `unit`), `at_most_ratio` or `at_least_ratio` is the issue's
        target, if it set one. `baseline` None: a figure without one (shown as "-", ratio n/a)."""
        fmt = "%%.%df %%s" % digits
        if ratio is None:
            ratio = (ours / baseline) if baseline else float("nan")
        target = ""
        if at_most is not None:
            target = "<= %s %s: %s" % (("%g" % at_most), unit, "met" if ours <= at_most else "NOT met")
        elif at_most_ratio is not None:
            target = "<= %.2fx: %s" % (at_most_ratio, "met" if ratio <= at_most_ratio else "NOT met")
        elif at_least_ratio is not None:
            target = ">= %.2fx: %s" % (at_least_ratio, "met" if ratio >= at_least_ratio else "NOT met")
        self.rows.append((section, figure, (fmt % (ours, unit)).strip(),
                          "-" if baseline is None else (fmt % (baseline, unit)).strip(),
                          "n/a" if ratio != ratio else "%.2fx" % ratio, target))

    def move_last_after(self, prefix):
        """Moves the row just added to stand after the last row whose figure starts with
        `prefix` (a row that needs a later section's figure, kept beside its kin)."""
        row = self.rows.pop()
        after = max((i for i, r in enumerate(self.rows) if r[1].startswith(prefix)), default=len(self.rows) - 1)
        self.rows.insert(after + 1, row)

    def print_table(self, elapsed):
        print()
        print("FingerAuth benchmark — each figure against its baseline, measured in this run except where marked "
              "\"recorded\" (%.0f s; load average at the end %.2f %.2f %.2f); target: the issue's, where it set one"
              % ((elapsed,) + os.getloadavg()))
        headers = ("#", "figure", "ours", "baseline", "ratio", "target")
        widths = [max(len(str(r[i])) for r in self.rows + [headers]) for i in range(6)]
        line = "| " + " | ".join("%-*s" % (widths[i], headers[i]) for i in range(6)) + " |"
        print(line)
        print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
        for r in self.rows:
            print("| " + " | ".join("%-*s" % (widths[i], str(r[i])) for i in range(6)) + " |")
        for line in self.details:
            print(line)
        for note in self.notes:
            print("note: " + note)
        for check in self.failed_checks:
            print("CHECK FAILED: " + check)
