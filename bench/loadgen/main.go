// The bench's load client in Go, for the latency rounds: a Node client on the same core as the
// upstream spent ~50 µs a request and paused for its own collections, and that jitter showed in every
// row's p99, the upstream's alone included. It speaks bench/load.mjs's protocol as JSON lines on
// stdin and stdout: an options object, {"warm":true} once warmed, a "go" line, then {"result":…}.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

type request struct {
	Method  string            `json:"method"`
	Path    string            `json:"path"`
	Headers map[string]string `json:"headers"`
	Body    *string           `json:"body"`
}

type options struct {
	Base        string    `json:"base"`
	Mix         []request `json:"mix"`
	Concurrency int       `json:"concurrency"`
	DurationMs  float64   `json:"durationMs"`
	MaxRequests int       `json:"maxRequests"`
	Rate        float64   `json:"rate"`
	WarmupMs    float64   `json:"warmupMs"`
	OnWarm      bool      `json:"onWarm"`
}

type result struct {
	Count    int            `json:"count"`
	Ok       int            `json:"ok"`
	Statuses map[string]int `json:"statuses"`
	Seconds  float64        `json:"seconds"`
	Rps      float64        `json:"rps"`
	P50      *float64       `json:"p50"`
	P90      *float64       `json:"p90"`
	P99      *float64       `json:"p99"`
	Max      *float64       `json:"max"`
	Warmup   int            `json:"warmup"`
	Client   string         `json:"client"`
	// How late the client itself sent, at p50 and p99 (ms): its share of every latency above.
	SendLagP50 *float64 `json:"sendLagP50"`
	SendLagP99 *float64 `json:"sendLagP99"`
}

type client struct {
	http *http.Client
	base string
	mix  []request
	next atomic.Uint64
	// lagged hears how late each fixed-rate request left against its intended time.
	lagged func(time.Duration)
}

func newClient(o options) *client {
	conns := o.Concurrency
	if conns < 1 {
		conns = 1
	}
	transport := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxConnsPerHost:     conns,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	return &client{http: &http.Client{Transport: transport, Timeout: 60 * time.Second}, base: strings.TrimRight(o.Base, "/"), mix: o.Mix}
}

// once sends the mix's next request and reads its whole answer; 0 stands for a failed exchange.
func (c *client) once() int {
	r := c.mix[(c.next.Add(1)-1)%uint64(len(c.mix))]
	var body io.Reader
	if r.Body != nil {
		body = strings.NewReader(*r.Body)
	}
	req, err := http.NewRequest(r.Method, c.base+r.Path, body)
	if err != nil {
		return 0
	}
	for k, v := range r.Headers {
		req.Header.Set(k, v)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return 0
	}
	_, err = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if err != nil {
		return 0
	}
	return res.StatusCode
}

type recorder struct {
	mu        sync.Mutex
	latencies []float64
	statuses  map[string]int
	max       int
}

func (r *recorder) record(status int, since time.Time) {
	ms := float64(time.Since(since).Nanoseconds()) / 1e6
	r.mu.Lock()
	if len(r.latencies) < r.max {
		r.latencies = append(r.latencies, ms)
	}
	r.statuses[fmt.Sprint(status)]++
	r.mu.Unlock()
}

// atRate sends at o.Rate for ms (or limit requests), each latency taken from its intended send time,
// so that a stalled server cannot hide its queueing delay behind a client that waited for it.
func (c *client) atRate(rate, ms float64, limit int, done func(int, time.Time)) int {
	// The sender keeps a thread of its own: Go's scheduler waits in whole milliseconds when idle, which
	// sent ~7 requests at a time at 7000 req/s and counted up to 1 ms of the client's lateness as latency.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	setTimerSlack()
	start := time.Now()
	interval := time.Duration(float64(time.Second) / rate)
	until := start.Add(time.Duration(ms * float64(time.Millisecond)))
	var wg sync.WaitGroup
	sent := 0
	for sent < limit {
		now := time.Now()
		if !now.Before(until) {
			break
		}
		due := int(now.Sub(start)/interval) + 1
		for ; sent < due && sent < limit; sent++ {
			intended := start.Add(time.Duration(sent) * interval)
			wg.Add(1)
			go func() {
				defer wg.Done()
				if c.lagged != nil {
					c.lagged(time.Since(intended))
				}
				done(c.once(), intended)
			}()
		}
		preciseSleep(start.Add(time.Duration(sent) * interval).Sub(time.Now()))
	}
	wg.Wait()
	return sent
}

func (c *client) closedLoops(n int, until time.Time, keepGoing func() bool, done func(int, time.Time)) {
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for keepGoing() && time.Now().Before(until) {
				started := time.Now()
				done(c.once(), started)
			}
		}()
	}
	wg.Wait()
}

// percentile is nil for no requests (JSON has no NaN; Node's client sent NaN, which IPC made null).
func percentile(sorted []float64, p float64) *float64 {
	n := len(sorted)
	if n == 0 {
		return nil
	}
	i := int(math.Floor(p / 100 * float64(n)))
	if i > n-1 {
		i = n - 1
	}
	return &sorted[i]
}

func run(o options, lines *bufio.Scanner, send func(any)) result {
	c := newClient(o)
	defer c.http.CloseIdleConnections()
	if len(c.mix) == 0 {
		panic("an empty mix")
	}
	warmup := 0
	ignore := func(int, time.Time) {}
	if o.WarmupMs > 0 && o.Rate > 0 {
		warmup = c.atRate(o.Rate, o.WarmupMs, math.MaxInt, ignore)
	} else if o.WarmupMs > 0 {
		var count atomic.Int64
		c.closedLoops(o.Concurrency, time.Now().Add(time.Duration(o.WarmupMs*float64(time.Millisecond))), func() bool { return true }, func(int, time.Time) { count.Add(1) })
		warmup = int(count.Load())
	}
	// The client's own collections stay out of the measured window: off while it runs, one between runs.
	runtime.GC()
	if o.OnWarm {
		send(map[string]bool{"warm": true})
		if !lines.Scan() {
			os.Exit(0)
		}
	}
	rec := &recorder{statuses: map[string]int{}, max: o.MaxRequests, latencies: make([]float64, 0, min(o.MaxRequests, 1<<20))}
	var lagMu sync.Mutex
	lags := make([]float64, 0, 1<<16)
	c.lagged = func(d time.Duration) {
		lagMu.Lock()
		lags = append(lags, float64(d.Nanoseconds())/1e6)
		lagMu.Unlock()
	}
	t0 := time.Now()
	if o.Rate > 0 {
		c.atRate(o.Rate, o.DurationMs, o.MaxRequests, rec.record)
	} else {
		var n atomic.Int64
		c.closedLoops(o.Concurrency, t0.Add(time.Duration(o.DurationMs*float64(time.Millisecond))),
			func() bool { return n.Load() < int64(o.MaxRequests) },
			func(s int, started time.Time) { n.Add(1); rec.record(s, started) })
	}
	seconds := time.Since(t0).Seconds()
	c.lagged = nil
	sort.Float64s(rec.latencies)
	sort.Float64s(lags)
	ok := 0
	for s, count := range rec.statuses {
		var code int
		fmt.Sscan(s, &code)
		if code >= 200 && code < 400 {
			ok += count
		}
	}
	n := len(rec.latencies)
	return result{
		Count: n, Ok: ok, Statuses: rec.statuses, Seconds: seconds, Rps: float64(n) / seconds,
		P50: percentile(rec.latencies, 50), P90: percentile(rec.latencies, 90), P99: percentile(rec.latencies, 99),
		Max: percentile(rec.latencies, 100), Warmup: warmup, Client: "go",
		SendLagP50: percentile(lags, 50), SendLagP99: percentile(lags, 99),
	}
}

func main() {
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(1 << 30)
	lines := bufio.NewScanner(os.Stdin)
	lines.Buffer(make([]byte, 1<<20), 64<<20)
	out := json.NewEncoder(os.Stdout)
	send := func(v any) {
		if err := out.Encode(v); err != nil {
			os.Exit(1)
		}
	}
	for lines.Scan() {
		var o options
		if err := json.Unmarshal(lines.Bytes(), &o); err != nil || o.Base == "" {
			continue // a stray "go", or a line that is not a run
		}
		func() {
			defer func() {
				if e := recover(); e != nil {
					send(map[string]string{"error": fmt.Sprint(e)})
				}
			}()
			send(map[string]result{"result": run(o, lines, send)})
		}()
	}
}

// setTimerSlack asks the kernel to wake this thread within 1 µs of its deadline instead of 50 µs.
func setTimerSlack() {
	const prSetTimerSlack = 29
	syscall.Syscall(syscall.SYS_PRCTL, prSetTimerSlack, 1000, 0)
}

// preciseSleep sleeps in the kernel (nanosleep) rather than in Go's scheduler.
func preciseSleep(d time.Duration) {
	if d <= 0 {
		return
	}
	ts := syscall.NsecToTimespec(d.Nanoseconds())
	syscall.Nanosleep(&ts, nil)
}
