"""`python -m crawlapp.cli`: crawlctl."""

from crawlapp.cli import main

main()
