#!/usr/bin/env bash
# `pnpm conformance [--update-report] [--conformance-profiles=A,B]`: the Gateway API conformance
# suite against Tollgate on the e2e node (e2e/node/conformance.test.ts; docs/conformance.md), every
# profile of CONFORMANCE_PROFILES (e2e/node/conformance-support.ts) in one run unless some are named.
# The run writes its report to .test-results/conformance/; with --update-report a passing run's
# report is copied to conformance/reports/<gateway-api version>/, the committed one.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

update=0
for arg in "$@"; do
  case "${arg}" in
    --update-report) update=1 ;;
    --conformance-profiles=*) export TOLLGATE_CONFORMANCE_PROFILES="${arg#--conformance-profiles=}" ;;
    -h|--help)
      sed -n '2,6s/^# \{0,1\}//p' "$0"
      echo "Environment: TOLLGATE_CONFORMANCE_RUN_TEST=<ShortName> runs one test (its report is never copied)."
      exit 0 ;;
    *) echo "conformance: unknown argument ${arg} (usage: pnpm conformance [--update-report] [--conformance-profiles=A,B])" >&2; exit 2 ;;
  esac
done
if (( update )) && [[ -n "${TOLLGATE_CONFORMANCE_RUN_TEST:-}${TOLLGATE_CONFORMANCE_PROFILES:-}" ]]; then
  echo "conformance: --update-report needs every profile whole; TOLLGATE_CONFORMANCE_RUN_TEST runs one test, --conformance-profiles some profiles" >&2
  exit 2
fi

bash conformance/build-suite.sh >/dev/null
pnpm build
pnpm images tollgate tollgate-controller
TOLLGATE_CONFORMANCE=1 node scripts/run-tests.mjs --project machine e2e/node/conformance.test.ts

if (( update )); then
  version="$(node -p 'require("./e2e/tools.json").gatewayApi')"
  shopt -s nullglob
  proxy="$(node -p 'require("./packages/proxy/package.json").version')"
  reports=(".test-results/conformance/tollgate-v${proxy}-report.yaml")
  [[ -f "${reports[0]}" ]] || { echo "conformance: no report ${reports[0]}" >&2; exit 1; }
  mkdir -p "conformance/reports/${version}"
  cp "${reports[0]}" "conformance/reports/${version}/"
  echo "conformance: report copied to conformance/reports/${version}/$(basename "${reports[0]}")"
fi
