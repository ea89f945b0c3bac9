//go:build franzgo_848

package main

import "github.com/twmb/franz-go/pkg/kgo"

// Built with the franzgo_848 tag: franz-go 1.22.0 and later (conformance/members/kinds/franz_go.py
// build_tags), which have kgo.ServerSideBalancer, the opt-in to KIP-848 consumer groups.

func serverSideAvailable() error { return nil }

// serverSideOpts are the options that make kgo speak the consumer group protocol (KIP-848).
func serverSideOpts() []kgo.Opt { return []kgo.Opt{kgo.ServerSideBalancer()} }
