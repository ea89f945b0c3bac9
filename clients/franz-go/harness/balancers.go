package main

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
)

// balancerFor maps a canonical strategy name (conformance/members/harness_config.py) to kgo's
// balancer. Every franz-go 1.x has all four; cooperative-sticky is kgo's default.
func balancerFor(name string) (kgo.GroupBalancer, error) {
	switch name {
	case "cooperative-sticky":
		return kgo.CooperativeStickyBalancer(), nil
	case "sticky":
		return kgo.StickyBalancer(), nil
	case "range":
		return kgo.RangeBalancer(), nil
	case "roundrobin":
		return kgo.RoundRobinBalancer(), nil
	}
	return nil, fmt.Errorf("unknown assignment strategy %q (franz-go has cooperative-sticky, sticky, range, roundrobin)", name)
}

// declaredProtocol is the history's `protocol` before the first assignment: cooperative when
// every listed strategy is cooperative. kgo itself decides per join by the protocol the group
// chose (a [cooperative-sticky, range] member runs cooperatively in a group that chose
// cooperative-sticky); observed below.
func declaredProtocol(strategies []string) string {
	for _, s := range strategies {
		if s != "cooperative-sticky" {
			return "eager"
		}
	}
	return "cooperative"
}

// observed wraps one of kgo's balancers and changes nothing it writes or decides. kgo parses
// every SyncGroup assignment with the balancer of the protocol the group chose, so
// ParseSyncAssignment tells which one it is; the history's `protocol` follows it (eager or
// cooperative, as kgo's IsCooperative says), before kgo calls any partition callback of that
// generation.
type observed struct {
	kgo.GroupBalancer
	hist *History
}

func (o observed) ParseSyncAssignment(assignment []byte) (map[string][]int32, error) {
	if o.IsCooperative() {
		o.hist.setContext("protocol", "cooperative")
	} else {
		o.hist.setContext("protocol", "eager")
	}
	return o.GroupBalancer.ParseSyncAssignment(assignment)
}

// groupBalancers is the balancer list for kgo.Balancers, in the config's order.
//
// Group protocols: "classic" (JoinGroup/SyncGroup, the client's balancer assigns) is what this
// harness runs. "consumer" (KIP-848) is refused for now with a fatal error. The later change
// that runs it adds kgo.ServerSideBalancer() (franz-go 1.22.0+, a build tag like the Sarama
// harness's) and must pass kgo's own balancers UNWRAPPED: kgo picks the server-side assignor
// by the concrete type of the first balancer (sticky -> "uniform", range -> "range"), which a
// wrapper hides; the history's protocol is then "consumer".
func groupBalancers(cfg *Config, hist *History) ([]kgo.GroupBalancer, error) {
	if cfg.GroupProtocol != "classic" {
		return nil, fmt.Errorf("this franz-go harness runs group_protocol \"classic\" only, not %q "+
			"(KIP-848 through kgo.ServerSideBalancer, franz-go 1.22.0+, is not wired in yet)", cfg.GroupProtocol)
	}
	var out []kgo.GroupBalancer
	for _, name := range cfg.AssignmentStrategies {
		b, err := balancerFor(name)
		if err != nil {
			return nil, err
		}
		out = append(out, observed{GroupBalancer: b, hist: hist})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("assignment_strategies is empty")
	}
	return out, nil
}
