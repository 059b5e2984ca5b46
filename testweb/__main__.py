"""Command line: `python -m testweb serve` runs the test web, `check` judges its log;
`serve-changing` runs the changing web (testweb/changing.py)."""

from __future__ import annotations

import argparse
import asyncio
import json
from dataclasses import replace

from testweb import serverlog
from testweb.server import (
    add_changing_arguments,
    add_spec_arguments,
    changing_spec_from_args,
    serve,
    serve_changing,
    spec_from_args,
)
from testweb.site import Web

MISSING_SHOWN = 10


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    status: int = args.run(args)
    return status


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m testweb", description=__doc__)
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    serve_cmd = commands.add_parser("serve", help="serve the test web until SIGTERM/SIGINT")
    add_spec_arguments(serve_cmd)
    serve_cmd.add_argument("--log", required=True, help="request log (JSON lines, appended)")
    serve_cmd.add_argument("--ready", help="file to write the port to once listening")
    serve_cmd.add_argument("--seeds-out", help="file to write the seed URLs to, one a line")
    serve_cmd.add_argument("--generation-file",
                           help="file holding the content generation, re-read when it changes "
                                "(SIGUSR1 also moves the generation on by one)")
    serve_cmd.add_argument("--tls-cert", help="TLS: the certificate file (PEM) of every host")
    serve_cmd.add_argument("--tls-key", help="TLS: its private key file (PEM)")
    serve_cmd.set_defaults(run=_serve)

    changing_cmd = commands.add_parser(
        "serve-changing", help="serve a web whose pages change (testweb/changing.py) until "
        "SIGTERM/SIGINT; each log line carries the version that answered (`ver`)")
    add_changing_arguments(changing_cmd)
    changing_cmd.add_argument("--log", required=True, help="request log (JSON lines, appended)")
    changing_cmd.add_argument("--ready", help="file to write {\"port\": P, \"t0\": T} to once "
                              "listening (versions follow time.time() - T)")
    changing_cmd.add_argument("--seeds-out", help="file to write the seed URLs to, one a line")
    changing_cmd.set_defaults(run=_serve_changing)

    check_cmd = commands.add_parser("check", help="print politeness and coverage of a request log")
    add_spec_arguments(check_cmd)
    check_cmd.add_argument("--log", required=True)
    check_cmd.add_argument("--delay", type=float, default=1.0,
                           help="the crawler's default delay per host")
    check_cmd.add_argument("--tolerance", type=float, default=0.0,
                           help="seconds a gap may fall short")
    check_cmd.add_argument("--max-depth", type=int, default=5)
    check_cmd.add_argument("--sitemaps", action="store_true",
                           help="expect the sitemap-only pages of the case hosts too")
    check_cmd.set_defaults(run=_check)
    return parser


def _serve(args: argparse.Namespace) -> int:
    spec = spec_from_args(args)
    if spec.tls != bool(args.tls_cert and args.tls_key):
        raise SystemExit("--tls goes with --tls-cert and --tls-key")
    tls = (args.tls_cert, args.tls_key) if spec.tls else None
    asyncio.run(serve(Web(spec), args.log, args.ready, seeds_path=args.seeds_out,
                      generation_path=args.generation_file, tls=tls))
    return 0


def _serve_changing(args: argparse.Namespace) -> int:
    asyncio.run(serve_changing(changing_spec_from_args(args), args.log, args.ready,
                               seeds_path=args.seeds_out))
    return 0


def _check(args: argparse.Namespace) -> int:
    """Print the log's summary and the expected pages never fetched (port 0: port from the log)."""
    requests = serverlog.load(args.log)
    spec = spec_from_args(args)
    if spec.port == 0 and requests:
        spec = replace(spec, port=int(requests[0].host.rsplit(":", 1)[1]))
    web = Web(spec)
    expected = web.expected_pages(args.max_depth, sitemaps=args.sitemaps)
    missing = sorted(expected - set(serverlog.fetched_urls(requests)))
    report: dict[str, object] = {
        **serverlog.summary(requests, web, args.delay, args.tolerance),
        "expected_pages": len(expected),
        "missing": {"count": len(missing), "first": missing[:MISSING_SHOWN]},
    }
    if web.case_kinds:
        report["cases"] = serverlog.case_report(requests, web, args.max_depth,
                                                sitemaps=args.sitemaps)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
