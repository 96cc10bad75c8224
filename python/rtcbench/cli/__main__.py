"""`python -m rtcbench.cli`: the `rtcbench` command."""

from rtcbench.cli import main

main()
