"""One line per check and a closing count, shared by the command-line test scripts."""

counts = {"passed": 0, "failed": 0}


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else ": " + detail))
    counts["passed" if ok else "failed"] += 1


def summary():
    """Prints 'N passed, N failed'; the exit status for the script."""
    print(f"{counts['passed']} passed, {counts['failed']} failed")
    return 1 if counts["failed"] else 0
