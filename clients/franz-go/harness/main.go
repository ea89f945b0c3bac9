// Command harness is the franz-go member of the conformance suite: one
// consumer group member (package kgo) that reads the harness JSON config (its
// only argument) and writes the event history (conformance/history.py) as JSON
// lines, one unbuffered write per event.
//
// It is built once per franz-go version by conformance/members/kinds/franz_go.py
// (through conformance/go_install.py's build_harness, whose go.mod requires
// github.com/twmb/franz-go at that version). It uses only APIs franz-go has had
// since 1.7.0 (Client.GroupMetadata is the newest of them), but for one build
// tag: franzgo_848 (1.22.0+) adds kgo.ServerSideBalancer for group_protocol
// "consumer" (server_side.go; without it server_side_none.go refuses that
// protocol), so one source builds against every release from 1.7.0.
//
// Mapping of kgo's group callbacks onto history events (every event carries
// the member id and generation of kgo's Client.GroupMetadata at that moment,
// and `protocol` as described in balancers.go):
//
//   - BlockRebalanceOnPoll is on: kgo calls OnPartitions{Assigned,Revoked,Lost}
//     only between polls (after AllowRebalance), never while polled records
//     are being processed, as Java calls its listener inside poll(). So a
//     `consumed` event is always written for a partition the history owns.
//   - OnPartitionsAssigned: `assigned` with the partitions given (cooperative:
//     the ones added; eager: the whole new set).
//   - OnPartitionsRevoked (cooperative: what the leader took away; eager: the
//     whole set at the end of a session; and everything when leaving): commit
//     the revoked partitions' consumed offsets (sync-batch, on-revoke), then
//     `revoked`. kgo also calls it with nothing at every session's end; then
//     nothing is recorded.
//   - OnPartitionsLost (kgo's "fatal" group errors: UNKNOWN_MEMBER_ID,
//     ILLEGAL_GENERATION, a session that timed out): `lost`, no commit.
//   - Commit modes: auto -> kgo's autocommit (its interval), and in
//     OnPartitionsRevoked the blocking CommitUncommittedOffsets kgo's own
//     default revoke callback would make (not recorded: the client commits);
//     sync-batch -> after each poll's records are processed, one CommitRecords
//     of the last record of each partition, recorded as `committed` with its
//     error (kgo returns the request's or the first partition's error);
//     on-revoke -> CommitRecords only in OnPartitionsRevoked.
//   - Errors that kgo injects into a poll (fetch errors, group session errors)
//     are `error` events with `fatal: false`.
//   - SIGTERM/SIGINT: stop polling, CloseAllowingRebalance (which revokes
//     everything through OnPartitionsRevoked, commits per mode and sends
//     LeaveGroup unless the member is static; a consumer member instead sends
//     ConsumerGroupHeartbeat with epoch -1, or -2 when static), `stopped`,
//     exit 0. A client that cannot be created, or a group protocol the
//     harness does not run, writes a fatal `error` and exits 2.
//   - group_protocol "consumer" (KIP-848; balancers.go): `protocol` is
//     "consumer" on every event; kgo's Client.GroupMetadata gives the member
//     epoch as the generation (kgo's own doc, 1.22.x), so `generation` is the
//     epoch kgo holds at that moment and `assigned` / `revoked` / `lost` also
//     carry it as `member_epoch`. kgo gives the application no other epoch (no
//     per-assignment epoch): after a fence kgo rejoins at epoch 0, so a `lost`
//     written then may carry 0. kgo silently runs classic when the broker does
//     not serve ConsumerGroupHeartbeat v1 (or answers UNSUPPORTED_VERSION);
//     the harness sees that in kgo's log (lifecycleTap) and stops with a fatal
//     `error` rather than record a classic member as a consumer one.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
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

func (h *History) setContext(key string, value any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ctx[key] = value
}

// Record writes one event line: ts, the common fields, the context, then fields.
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

func flatten(m map[string][]int32) []tp {
	var out []tp
	for topic, parts := range m {
		for _, p := range parts {
			out = append(out, tp{topic, p})
		}
	}
	return out
}

// Member is the harness's state: what it owns and what it consumed but has not committed.
type Member struct {
	cfg  *Config
	hist *History
	cl   *kgo.Client
	tap  *lifecycleTap

	mu          sync.Mutex
	owned       map[tp]bool
	uncommitted map[tp]*kgo.Record // last processed record of each owned partition, not committed yet
}

// groupContext refreshes member_id and generation (a consumer member's epoch) from the client.
func (m *Member) groupContext(cl *kgo.Client) {
	id, gen := cl.GroupMetadata()
	if id != "" {
		m.hist.setContext("member_id", id)
	}
	if gen >= 0 {
		m.hist.setContext("generation", gen)
	}
}

// ownership is the fields of an `assigned` / `revoked` / `lost` event: the partitions and, for a
// consumer member, member_epoch (the epoch kgo holds now: groupContext's generation).
func (m *Member) ownership(cl *kgo.Client, tps []tp) map[string]any {
	fields := map[string]any{"partitions": tpList(tps)}
	if m.cfg.GroupProtocol == "consumer" {
		if _, epoch := cl.GroupMetadata(); epoch >= 0 {
			fields["member_epoch"] = epoch
		}
	}
	return fields
}

// commit synchronously commits the uncommitted records of tps and records `committed`; m.mu must be held.
func (m *Member) commit(ctx context.Context, cl *kgo.Client, tps []tp) {
	var records []*kgo.Record
	var offsets [][]any
	for _, k := range tps {
		if r := m.uncommitted[k]; r != nil {
			records = append(records, r)
			offsets = append(offsets, []any{k.Topic, k.Partition, r.Offset + 1})
		}
	}
	if len(records) == 0 {
		return
	}
	sort.Slice(offsets, func(i, j int) bool {
		a, b := offsets[i], offsets[j]
		if a[0].(string) != b[0].(string) {
			return a[0].(string) < b[0].(string)
		}
		return a[1].(int32) < b[1].(int32)
	})
	err := cl.CommitRecords(ctx, records...)
	var errText any
	if err != nil {
		errText = err.Error()
	} else {
		for _, k := range tps {
			delete(m.uncommitted, k)
		}
	}
	m.groupContext(cl)
	m.hist.Record("committed", map[string]any{"offsets": offsets, "error": errText})
}

// classicInstead is kgo's log line that started the classic lifecycle of a consumer member, or "".
func (m *Member) classicInstead() string {
	if m.cfg.GroupProtocol != "consumer" {
		return ""
	}
	return m.tap.classicStarted()
}

func (m *Member) onAssigned(_ context.Context, cl *kgo.Client, assigned map[string][]int32) {
	if m.classicInstead() != "" {
		return // a classic assignment is not this consumer member's; run stops with a fatal error
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.groupContext(cl)
	var added []tp
	for _, k := range flatten(assigned) {
		if !m.owned[k] {
			m.owned[k] = true
			added = append(added, k)
		}
	}
	if len(added) > 0 {
		m.hist.Record("assigned", m.ownership(cl, added))
	}
}

func (m *Member) onRevoked(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.groupContext(cl)
	var gone []tp
	for _, k := range flatten(revoked) {
		if m.owned[k] {
			gone = append(gone, k)
		}
	}
	switch m.cfg.CommitMode {
	case "auto":
		// What kgo's default OnPartitionsRevoked does when autocommitting.
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			m.hist.Record("error", map[string]any{"error": "autocommit on revoke: " + err.Error(), "fatal": false})
		}
	default:
		m.commit(ctx, cl, gone)
	}
	m.forget(gone)
	if len(gone) > 0 {
		m.hist.Record("revoked", m.ownership(cl, gone))
	}
}

func (m *Member) onLost(_ context.Context, cl *kgo.Client, lost map[string][]int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.groupContext(cl)
	var gone []tp
	for _, k := range flatten(lost) {
		if m.owned[k] {
			gone = append(gone, k)
		}
	}
	m.forget(gone)
	if len(gone) > 0 {
		m.hist.Record("lost", m.ownership(cl, gone))
	}
}

// forget drops tps from the owned set and their uncommitted records; m.mu must be held.
func (m *Member) forget(tps []tp) {
	for _, k := range tps {
		delete(m.owned, k)
		delete(m.uncommitted, k)
	}
}

// nowMs is the history's clock: epoch milliseconds.
func nowMs() float64 { return float64(time.Now().UnixNano()) / 1e6 }

// process handles one poll's records, partition by partition (rebalances are blocked meanwhile).
func (m *Member) process(ctx context.Context, fetches kgo.Fetches, pollTs float64) {
	delay := time.Duration(m.cfg.ProcessingDelayMs) * time.Millisecond
	var consumed []tp
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		if len(p.Records) == 0 {
			return
		}
		if delay > 0 {
			time.Sleep(delay * time.Duration(len(p.Records)))
		}
		first, last := p.Records[0], p.Records[len(p.Records)-1]
		key := tp{p.Topic, p.Partition}
		m.mu.Lock()
		m.groupContext(m.cl)
		m.hist.Record("consumed", map[string]any{"topic": p.Topic, "partition": p.Partition,
			"first_offset": first.Offset, "last_offset": last.Offset, "count": len(p.Records), "poll_ts": pollTs})
		if m.cfg.CommitMode != "auto" {
			m.uncommitted[key] = last
		}
		m.mu.Unlock()
		consumed = append(consumed, key)
	})
	if m.cfg.CommitMode == "sync-batch" && len(consumed) > 0 {
		m.mu.Lock()
		m.commit(ctx, m.cl, consumed)
		m.mu.Unlock()
	}
}

// lifecycleTap is kgo's logger (BasicLogger to stderr) that also watches which group lifecycle
// kgo starts: kgo logs "beginning to manage the group lifecycle" when it runs classic (manage)
// and "beginning to manage the next-gen group lifecycle" when a KIP-848 join was answered
// (consumer_group.go and consumer_group_848.go of 1.22.x). A consumer member whose kgo starts the
// classic lifecycle (no KIP-848 support on the broker, or a fallback after UNSUPPORTED_VERSION)
// is reported by classic(); nothing else changes.
type lifecycleTap struct {
	kgo.Logger
	mu      sync.Mutex
	classic string
}

func (t *lifecycleTap) Log(level kgo.LogLevel, msg string, keyvals ...interface{}) {
	if msg == "beginning to manage the group lifecycle" ||
		strings.HasPrefix(msg, "falling back to standard consumer group management") {
		t.mu.Lock()
		if t.classic == "" {
			t.classic = msg
		}
		t.mu.Unlock()
	}
	t.Logger.Log(level, msg, keyvals...)
}

// classicStarted is kgo's log line that started the classic lifecycle, or "".
func (t *lifecycleTap) classicStarted() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.classic
}

func clientOptions(cfg *Config, m *Member, balancers []kgo.GroupBalancer, tap *lifecycleTap) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(strings.Split(cfg.BootstrapServers, ",")...),
		kgo.ClientID(cfg.ClientID),
		kgo.ConsumerGroup(cfg.GroupID),
		kgo.ConsumeTopics(cfg.Topics...),
		kgo.Balancers(balancers...),
		kgo.SessionTimeout(time.Duration(cfg.SessionTimeoutMs) * time.Millisecond),
		kgo.HeartbeatInterval(time.Duration(cfg.HeartbeatIntervalMs) * time.Millisecond),
		kgo.RebalanceTimeout(time.Duration(cfg.MaxPollIntervalMs) * time.Millisecond),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(m.onAssigned),
		kgo.OnPartitionsRevoked(m.onRevoked),
		kgo.OnPartitionsLost(m.onLost),
		kgo.WithLogger(tap),
	}
	if cfg.GroupProtocol == "consumer" {
		opts = append(opts, serverSideOpts()...)
	}
	if cfg.AutoOffsetReset == "latest" {
		opts = append(opts, kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()))
	} else {
		opts = append(opts, kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	}
	if cfg.CommitMode != "auto" {
		opts = append(opts, kgo.DisableAutoCommit())
	}
	if cfg.GroupInstanceID != nil && *cfg.GroupInstanceID != "" {
		opts = append(opts, kgo.InstanceID(*cfg.GroupInstanceID))
	}
	if cfg.RackID != nil && *cfg.RackID != "" {
		opts = append(opts, kgo.Rack(*cfg.RackID))
	}
	return opts
}

func run(cfg *Config, hist *History) int {
	started := map[string]any{"strategies": cfg.AssignmentStrategies, "group_protocol": cfg.GroupProtocol}
	if cfg.GroupProtocol == "consumer" {
		hist.setContext("protocol", "consumer")
		started["server_assignor"] = serverAssignor(cfg)
	} else {
		hist.setContext("protocol", declaredProtocol(cfg.AssignmentStrategies))
	}
	hist.Record("started", started)
	fatal := func(msg string) int {
		hist.Record("error", map[string]any{"error": msg, "fatal": true})
		return 2
	}
	tap := &lifecycleTap{Logger: kgo.BasicLogger(os.Stderr, kgo.LogLevelInfo, func() string {
		return time.Now().UTC().Format("15:04:05.000 ")
	})}
	m := &Member{cfg: cfg, hist: hist, tap: tap, owned: map[tp]bool{}, uncommitted: map[tp]*kgo.Record{}}
	balancers, err := groupBalancers(cfg, hist)
	if err != nil {
		return fatal(err.Error())
	}
	cl, err := kgo.NewClient(clientOptions(cfg, m, balancers, tap)...)
	if err != nil {
		return fatal("client could not be created: " + err.Error())
	}
	m.cl = cl
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sigs
		cancel()
	}()
	control := newControlReader(cfg.ControlPath)
	topics := append([]string(nil), cfg.Topics...)
	for ctx.Err() == nil {
		// The application's turn between polls: commands of its control file (a stall holds no
		// rebalance: AllowRebalance ran at the end of the previous turn).
		serveControl(control, hist.Record, func(ms int64) { sleepUnlessStopped(ms, ctx.Done()) },
			func(next []string) error {
				var gone []string
				for _, t := range topics {
					if !slices.Contains(next, t) {
						gone = append(gone, t)
					}
				}
				cl.AddConsumeTopics(next...)
				if len(gone) > 0 {
					cl.PurgeTopicsFromClient(gone...)
				}
				topics = append([]string(nil), next...)
				return nil
			})
		if ctx.Err() != nil {
			break
		}
		pollCtx, pollCancel := context.WithTimeout(ctx, 200*time.Millisecond)
		pollTs := nowMs()
		fetches := cl.PollRecords(pollCtx, 500)
		pollCancel()
		if m.classicInstead() != "" {
			cl.Close()
			return fatal("group_protocol consumer: kgo runs the classic protocol instead (kgo logged \"" +
				m.classicInstead() + "\"; the broker does not serve ConsumerGroupHeartbeat v1)")
		}
		closed := false
		fetches.EachError(func(topic string, partition int32, err error) {
			switch {
			case errors.Is(err, kgo.ErrClientClosed):
				closed = true
			case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
			default:
				hist.Record("error", map[string]any{"error": fmt.Sprintf("poll: %s[%d]: %v", topic, partition, err),
					"fatal": false})
			}
		})
		if closed {
			break
		}
		m.process(ctx, fetches, pollTs)
		cl.AllowRebalance()
	}
	cl.CloseAllowingRebalance()
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
