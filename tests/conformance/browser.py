"""A browser with nobody in front of it, for $BROWSER: open the page, follow its redirects.

The conformance suite's authorization servers approve at once and redirect to the client's
redirect address; following that redirect is what a person's browser would do, and it
reaches aimon's loopback listener.
"""

from __future__ import annotations

import sys
import urllib.error
import urllib.request


def main() -> int:
    try:
        with urllib.request.urlopen(sys.argv[1], timeout=30) as response:
            response.read()
    except urllib.error.URLError as exc:
        print(f"browser: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
