// CoreDNS with only the plugins the e2e node and the Gateway API conformance manifests use.
//
// The upstream binary links every plugin, among them the AWS, Azure and Google Cloud DNS
// providers, whose SDKs make most of its build time (about 10 minutes cold on 2 cores). The
// cluster DNS Corefile (e2e/lib/node/coredns.ts) uses errors, health, ready, kubernetes and
// cache; the conformance suite's own CoreDNS uses forward, log, errors and whoami. The order
// below is upstream's plugin.cfg order restricted to those plugins, which decides the order in
// which a server block's plugins run, as in the upstream binary.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
	_ "github.com/coredns/coredns/plugin/whoami"
)

func init() {
	dnsserver.Directives = []string{
		"reload",
		"ready",
		"health",
		"errors",
		"log",
		"cache",
		"kubernetes",
		"loop",
		"forward",
		"whoami",
	}
}

func main() {
	coremain.Run()
}
