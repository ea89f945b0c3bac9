//go:build !franzgo_848

package main

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Built without the franzgo_848 tag: franz-go before 1.22.0, which has no kgo.ServerSideBalancer.

func serverSideAvailable() error {
	return errors.New("group_protocol \"consumer\" (KIP-848) needs franz-go 1.22.0 or later (kgo.ServerSideBalancer)")
}

func serverSideOpts() []kgo.Opt { return nil }
