// Command harness is the Sarama member of the conformance suite: one consumer
// group member that reads the harness JSON config (its only argument) and
// writes the event history (conformance/history.py) as JSON lines, one
// unbuffered write per event.
//
// It is built once per Sarama version by conformance/members/kinds/sarama.py.
// The source imports github.com/IBM/sarama; for releases published as
// github.com/Shopify/sarama (before 1.40) the build step rewrites that import
// path in a temporary copy of this directory. Each version-dependent API sits
// in a pair of files chosen by a build tag (kinds/sarama.py build_tags), so one
// source builds against every release from 1.19.0: commit_*.go by
// sarama_session_commit (ConsumerGroupSession.Commit, 1.27.0+; before, marks
// reach the broker through the offset manager's periodic flush), sticky.go /
// no_sticky.go by sarama_sticky (BalanceStrategySticky, 1.24.0+), strategies_*.go by
// sarama_coop (NewBalanceStrategyCooperativeSticky, 1.60.0+),
// config_strategies_*.go by sarama_group_strategies (GroupStrategies, 1.37.0+;
// before, exactly one Rebalance.Strategy), config_*instance_id.go by
// sarama_instance_id (Consumer.Group.InstanceId, 1.34.0+; before, a static
// member is a fatal configuration error).
//
// Mapping of Sarama's ConsumerGroupHandler onto history events (every event
// carries the session's GenerationID and MemberID):
//
//   - Setup: `assigned` with the session's claims not yet owned (eager: the
//     whole new set, since every eager rebalance is a new session).
//   - ConsumeClaim start: `assigned` with the session's claims not yet owned
//     (cooperative, 1.61+: a rebalance keeps the session and starts
//     ConsumeClaim only for the added partitions).
//   - ConsumeClaim end while the session lives (cooperative revoke: Sarama
//     closed that claim's Messages channel): commit that partition (per commit
//     mode), then `revoked` [that partition].
//   - Cleanup (eager rebalance, or leaving): commit, then `revoked` with every
//     partition still owned. Sarama gives no separate "lost" signal to the
//     handler; a failed commit or heartbeat surfaces as an `error` event from
//     the Errors() channel.
//   - Commit modes: auto -> Offsets.AutoCommit; sync-batch -> MarkOffset and a
//     synchronous session.Commit() after each batch; on-revoke -> MarkOffset
//     only, Commit() at revoke and Cleanup. session.Commit() returns no error:
//     `committed.error` is null and a failure arrives as an `error` event.
//     Before 1.27.0 there is no Commit(): marks are flushed every second and
//     at the session's end (commit_marked.go), so `committed` records what
//     was handed to Sarama, not a finished commit.
//   - Control file (conformance/members/control.py, read every 200 ms by a goroutine):
//     `stall` holds every claim before its next batch for ms; `subscribe` ends the current
//     Consume call and consumes again with the new topics.
//   - SIGTERM: cancel the Consume context (Cleanup runs), Close() the group
//     (LeaveGroup unless static), `stopped`, exit 0. A client that cannot be
//     created writes a fatal `error` and exits 2.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/IBM/sarama"
)

// Config is the harness contract's JSON config (conformance/members/harness_config.py).
type Config struct {
	Member               string         `json:"member"`
	Client               string         `json:"client"`
	ClientVersion        string         `json:"client_version"`
	ClientID             string         `json:"client_id"`
	BootstrapServers     string         `json:"bootstrap_servers"`
	GroupID              string         `json:"group_id"`
	Topics               []string       `json:"topics"`
	AssignmentStrategies []string       `json:"assignment_strategies"`
	GroupProtocol        string         `json:"group_protocol"`
	GroupInstanceID      *string        `json:"group_instance_id"`
	SessionTimeoutMs     int            `json:"session_timeout_ms"`
	HeartbeatIntervalMs  int            `json:"heartbeat_interval_ms"`
	MaxPollIntervalMs    int            `json:"max_poll_interval_ms"`
	CommitMode           string         `json:"commit_mode"`
	ProcessingDelayMs    int            `json:"processing_delay_ms"`
	AutoOffsetReset      string         `json:"auto_offset_reset"`
	HistoryPath          string         `json:"history_path"`
	RackID               *string        `json:"rack_id"`
	ControlPath          *string        `json:"control_path"`
	Extra                map[string]any `json:"extra"`
}

// History appends events to the member's JSONL history; safe for concurrent use.
type History struct {
	mu   sync.Mutex
	f    *os.File
	base map[string]any
	ctx  map[string]any
}

func openHistory(cfg *Config) (*History, error) {
	f, err := os.OpenFile(cfg.HistoryPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	return &History{f: f, base: map[string]any{"member": cfg.Member, "client": cfg.Client,
		"client_version": cfg.ClientVersion}, ctx: map[string]any{}}, nil
}

// nowMs is the history's clock: epoch milliseconds.
func nowMs() float64 { return float64(time.Now().UnixNano()) / 1e6 }

func (h *History) setContext(key string, value any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ctx[key] = value
}

func (h *History) Record(event string, fields map[string]any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	entry := map[string]any{"ts": nowMs(), "event": event}
	for k, v := range h.base {
		entry[k] = v
	}
	for k, v := range h.ctx {
		entry[k] = v
	}
	for k, v := range fields {
		entry[k] = v
	}
	line, err := json.Marshal(entry)
	if err != nil {
		line, _ = json.Marshal(map[string]any{"ts": entry["ts"], "event": "error", "member": h.base["member"],
			"client": h.base["client"], "client_version": h.base["client_version"],
			"error": "history: cannot encode " + event + ": " + err.Error(), "fatal": false})
	}
	h.f.Write(append(line, '\n'))
}

type tp struct {
	Topic     string
	Partition int32
}

func tpList(tps []tp) [][]any {
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	out := make([][]any, 0, len(tps))
	for _, t := range tps {
		out = append(out, []any{t.Topic, t.Partition})
	}
	return out
}

// Handler is the ConsumerGroupHandler; it keeps the owned set and offsets.
type Handler struct {
	cfg       *Config
	hist      *History
	mu        sync.Mutex
	owned     map[tp]bool
	positions map[tp]int64 // next offset to read
	committed map[tp]int64 // last offset handed to Commit()
	// gate is held for writing while the application stalls (its control file's `stall`): every
	// claim then waits before it processes its next batch, as an application blocked in its work.
	gate sync.RWMutex
}

func (h *Handler) sessionContext(s sarama.ConsumerGroupSession) {
	h.hist.setContext("member_id", s.MemberID())
	h.hist.setContext("generation", s.GenerationID())
}

// recordAdded records `assigned` for the session's claims this member does not own yet.
func (h *Handler) recordAdded(s sarama.ConsumerGroupSession) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sessionContext(s)
	var added []tp
	for topic, parts := range s.Claims() {
		for _, p := range parts {
			if k := (tp{topic, p}); !h.owned[k] {
				h.owned[k] = true
				added = append(added, k)
			}
		}
	}
	if len(added) > 0 {
		h.hist.Record("assigned", map[string]any{"partitions": tpList(added)})
	}
}

// mark marks the positions of tps not committed yet and returns them; h.mu must be held.
func (h *Handler) mark(s sarama.ConsumerGroupSession, tps []tp) [][]any {
	var offsets [][]any
	for _, k := range tps {
		pos, ok := h.positions[k]
		if !ok || h.committed[k] == pos {
			continue
		}
		s.MarkOffset(k.Topic, k.Partition, pos, "")
		offsets = append(offsets, []any{k.Topic, k.Partition, pos})
		h.committed[k] = pos
	}
	return offsets
}

// flush synchronously commits what was marked and records it; h.mu need not be held.
func (h *Handler) flush(s sarama.ConsumerGroupSession, offsets [][]any) {
	if len(offsets) == 0 {
		return
	}
	flushMarked(s)
	h.hist.Record("committed", map[string]any{"offsets": offsets, "error": nil})
}

// commit marks and synchronously commits the positions of tps not committed yet; h.mu must be held.
func (h *Handler) commit(s sarama.ConsumerGroupSession, tps []tp) {
	h.flush(s, h.mark(s, tps))
}

func (h *Handler) Setup(s sarama.ConsumerGroupSession) error {
	h.recordAdded(s)
	return nil
}

func (h *Handler) Cleanup(s sarama.ConsumerGroupSession) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sessionContext(s)
	var all []tp
	for k := range h.owned {
		all = append(all, k)
	}
	if h.cfg.CommitMode != "auto" {
		h.commit(s, all)
	}
	if len(all) > 0 {
		h.hist.Record("revoked", map[string]any{"partitions": tpList(all)})
	}
	h.owned = map[tp]bool{}
	h.positions = map[tp]int64{}
	h.committed = map[tp]int64{}
	return nil
}

func (h *Handler) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	h.recordAdded(s)
	key := tp{claim.Topic(), claim.Partition()}
	delay := time.Duration(h.cfg.ProcessingDelayMs) * time.Millisecond
	msgs := claim.Messages()
	closed := false
	for !closed {
		pollTs := nowMs() // the application starts waiting for the claim's next messages
		select {
		case <-s.Context().Done():
			return nil // session ends: Cleanup records the revoke
		case msg, ok := <-msgs:
			if !ok {
				closed = true
				break
			}
			if s.Context().Err() != nil {
				// select picks at random among ready cases: a message that raced the session's end
				// is not processed (the application checks the session first, as Sarama's docs ask).
				return nil
			}
			batch := []*sarama.ConsumerMessage{msg}
		drain:
			for len(batch) < 500 {
				select {
				case m, ok := <-msgs:
					if !ok {
						closed = true
						break drain
					}
					batch = append(batch, m)
				default:
					break drain
				}
			}
			h.gate.RLock() // a stall of the application holds the batch here
			h.gate.RUnlock()
			if delay > 0 {
				time.Sleep(delay * time.Duration(len(batch)))
			}
			last := batch[len(batch)-1]
			h.mu.Lock()
			h.sessionContext(s)
			h.hist.Record("consumed", map[string]any{"topic": key.Topic, "partition": key.Partition,
				"first_offset": batch[0].Offset, "last_offset": last.Offset, "count": len(batch), "poll_ts": pollTs})
			h.positions[key] = last.Offset + 1
			var pending [][]any
			switch h.cfg.CommitMode {
			case "auto":
				s.MarkMessage(last, "")
			case "sync-batch":
				pending = h.mark(s, []tp{key})
			}
			h.mu.Unlock()
			h.flush(s, pending) // outside the lock: other claims keep consuming during the commit
		}
	}
	if s.Context().Err() != nil {
		return nil // the whole session ends: Cleanup records the revoke
	}
	// Messages closed while the session lives: a cooperative revoke of this partition.
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sessionContext(s)
	if h.cfg.CommitMode != "auto" {
		h.commit(s, []tp{key})
	}
	h.hist.Record("revoked", map[string]any{"partitions": tpList([]tp{key})})
	delete(h.owned, key)
	delete(h.positions, key)
	delete(h.committed, key)
	return nil
}

func saramaConfig(cfg *Config) (*sarama.Config, error) {
	sc := sarama.NewConfig()
	sc.ClientID = cfg.ClientID
	kv := "3.3.1"
	if v, ok := cfg.Extra["kafka_version"].(string); ok && v != "" {
		kv = v
	}
	version, err := sarama.ParseKafkaVersion(kv)
	if err != nil {
		return nil, fmt.Errorf("extra.kafka_version %q: %w", kv, err)
	}
	sc.Version = version
	var strategies []sarama.BalanceStrategy
	for _, name := range cfg.AssignmentStrategies {
		s, err := strategyFor(name)
		if err != nil {
			return nil, err
		}
		strategies = append(strategies, s)
	}
	if err := setStrategies(sc, strategies); err != nil {
		return nil, err
	}
	sc.Consumer.Group.Session.Timeout = time.Duration(cfg.SessionTimeoutMs) * time.Millisecond
	sc.Consumer.Group.Heartbeat.Interval = time.Duration(cfg.HeartbeatIntervalMs) * time.Millisecond
	sc.Consumer.Group.Rebalance.Timeout = time.Duration(cfg.MaxPollIntervalMs) * time.Millisecond
	if cfg.GroupInstanceID != nil && *cfg.GroupInstanceID != "" {
		if err := setInstanceID(sc, *cfg.GroupInstanceID); err != nil {
			return nil, err
		}
	}
	if cfg.RackID != nil && *cfg.RackID != "" {
		if err := setRackID(sc, *cfg.RackID); err != nil {
			return nil, err
		}
	}
	setCommitConfig(sc, cfg.CommitMode)
	if cfg.AutoOffsetReset == "latest" {
		sc.Consumer.Offsets.Initial = sarama.OffsetNewest
	} else {
		sc.Consumer.Offsets.Initial = sarama.OffsetOldest
	}
	sc.Consumer.Return.Errors = true
	// Sarama before 1.40 sends OffsetCommit v1 when Retention is 0, a version
	// Kafka 4.x no longer accepts (KIP-896); a retention selects v2+.
	sc.Consumer.Offsets.Retention = 7 * 24 * time.Hour
	return sc, nil
}

func protocolOf(cfg *Config) string {
	for _, s := range cfg.AssignmentStrategies {
		if s != "cooperative-sticky" {
			return "eager"
		}
	}
	return "cooperative"
}

func run(cfg *Config, hist *History) int {
	hist.setContext("protocol", protocolOf(cfg))
	hist.Record("started", map[string]any{"strategies": cfg.AssignmentStrategies, "sarama_module": saramaModule,
		"cooperative_member": cooperativeMember == "true"})
	fatal := func(msg string) int {
		hist.Record("error", map[string]any{"error": msg, "fatal": true})
		return 2
	}
	if cfg.GroupProtocol != "classic" {
		return fatal(fmt.Sprintf("sarama does not implement group_protocol=%q (KIP-848); only \"classic\"", cfg.GroupProtocol))
	}
	sc, err := saramaConfig(cfg)
	if err != nil {
		return fatal("consumer configuration rejected: " + err.Error())
	}
	group, err := sarama.NewConsumerGroup(strings.Split(cfg.BootstrapServers, ","), cfg.GroupID, sc)
	if err != nil {
		return fatal("consumer group could not be created: " + err.Error())
	}
	go func() {
		for e := range group.Errors() {
			hist.Record("error", map[string]any{"error": e.Error(), "fatal": false})
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sigs
		cancel()
	}()
	handler := &Handler{cfg: cfg, hist: hist, owned: map[tp]bool{}, positions: map[tp]int64{}, committed: map[tp]int64{}}
	// The subscription and the context of the current Consume call: a `subscribe` command of the
	// control file ends the call (Sarama's only way to change topics) and the loop consumes again.
	var subMu sync.Mutex
	topics := append([]string(nil), cfg.Topics...)
	var endSession context.CancelFunc = func() {}
	control := newControlReader(cfg.ControlPath)
	go func() {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			serveControl(control, hist.Record, func(ms int64) {
				handler.gate.Lock()
				defer handler.gate.Unlock()
				sleepUnlessStopped(ms, ctx.Done())
			}, func(next []string) error {
				subMu.Lock()
				defer subMu.Unlock()
				topics = append([]string(nil), next...)
				endSession()
				return nil
			})
		}
	}()
	for ctx.Err() == nil {
		subMu.Lock()
		sessionCtx, cancelSession := context.WithCancel(ctx)
		endSession = cancelSession
		current := append([]string(nil), topics...)
		subMu.Unlock()
		err := group.Consume(sessionCtx, current, handler)
		cancelSession()
		if err != nil {
			if errors.Is(err, sarama.ErrClosedConsumerGroup) {
				break
			}
			hist.Record("error", map[string]any{"error": "consume: " + err.Error(), "fatal": false})
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
	if err := group.Close(); err != nil {
		hist.Record("error", map[string]any{"error": "close: " + err.Error(), "fatal": false})
	}
	hist.Record("stopped", map[string]any{"reason": "sigterm"})
	return 0
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: harness CONFIG_JSON")
		os.Exit(2)
	}
	raw, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "harness:", err)
		os.Exit(2)
	}
	var cfg Config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "harness: config %s: %v\n", os.Args[1], err)
		os.Exit(2)
	}
	hist, err := openHistory(&cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "harness: history:", err)
		os.Exit(2)
	}
	code := run(&cfg, hist)
	hist.f.Sync()
	hist.f.Close()
	os.Exit(code)
}
