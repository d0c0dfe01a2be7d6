// The bench's load client in Go, for the latency rounds: it sends at its times, not in timer-sized
// bursts, and its own collections stay out of the measured windows, so that the p99s are the servers'.
// It speaks bench/load.mjs's protocol as JSON lines on stdin and stdout: an options object,
// {"warm":true} once warmed, a "go" line, then {"result":…}.
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
	Count    int         `json:"count"`
	Ok       int         `json:"ok"`
	Statuses map[int]int `json:"statuses"`
	Seconds  float64     `json:"seconds"`
	Rps      float64     `json:"rps"`
	P50      *float64    `json:"p50"`
	P90      *float64    `json:"p90"`
	P99      *float64    `json:"p99"`
	Max      *float64    `json:"max"`
	Warmup   int         `json:"warmup"`
	Client   string      `json:"client"`
	// How late the client itself sent, at p50 and p99 (ms): its share of every latency above.
	SendLagP50 *float64 `json:"sendLagP50"`
	SendLagP99 *float64 `json:"sendLagP99"`
}

type client struct {
	http *http.Client
	base string
	mix  []request
	next atomic.Uint64
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

// recorder collects one run's answers; with max 0 it only counts them (a warm-up).
type recorder struct {
	mu        sync.Mutex
	latencies []float64
	lags      []float64
	statuses  map[int]int
	total     int
	max       int
}

func newRecorder(max int) *recorder {
	return &recorder{statuses: map[int]int{}, max: max, latencies: make([]float64, 0, min(max, 1<<20))}
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Nanoseconds()) / 1e6 }

func (r *recorder) record(status int, since time.Time) {
	ms := msSince(since)
	r.mu.Lock()
	if len(r.latencies) < r.max {
		r.latencies = append(r.latencies, ms)
	}
	r.statuses[status]++
	r.total++
	r.mu.Unlock()
}

// lateBy records how late a fixed-rate request left against its intended time.
func (r *recorder) lateBy(intended time.Time) {
	ms := msSince(intended)
	r.mu.Lock()
	if r.max > 0 {
		r.lags = append(r.lags, ms)
	}
	r.mu.Unlock()
}

// atRate sends at rate for ms (or limit requests), each latency taken from its intended send time,
// so that a stalled server cannot hide its queueing delay behind a client that waited for it.
func (c *client) atRate(rate, ms float64, limit int, rec *recorder) {
	// Go's scheduler waits in whole milliseconds when idle: the sender keeps a thread of its own and
	// sleeps in the kernel, so that requests leave one by one at their time rather than in bursts.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	setTimerSlack()
	start := time.Now()
	interval := time.Duration(float64(time.Second) / rate)
	until := start.Add(time.Duration(ms * float64(time.Millisecond)))
	var wg sync.WaitGroup
	for sent := 0; sent < limit && time.Now().Before(until); {
		due := int(time.Since(start)/interval) + 1
		for ; sent < due && sent < limit; sent++ {
			intended := start.Add(time.Duration(sent) * interval)
			wg.Add(1)
			go func() {
				defer wg.Done()
				rec.lateBy(intended)
				rec.record(c.once(), intended)
			}()
		}
		preciseSleep(time.Until(start.Add(time.Duration(sent) * interval)))
	}
	wg.Wait()
}

func (c *client) closedLoops(n int, until time.Time, limit int, rec *recorder) {
	var wg sync.WaitGroup
	var claimed atomic.Int64
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for claimed.Add(1) <= int64(limit) && time.Now().Before(until) {
				started := time.Now()
				rec.record(c.once(), started)
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

func after(ms float64) time.Time {
	return time.Now().Add(time.Duration(ms * float64(time.Millisecond)))
}

func run(o options, lines *bufio.Scanner, send func(any)) result {
	if len(o.Mix) == 0 {
		panic("an empty mix")
	}
	c := newClient(o)
	defer c.http.CloseIdleConnections()
	warm := newRecorder(0)
	if o.WarmupMs > 0 && o.Rate > 0 {
		c.atRate(o.Rate, o.WarmupMs, math.MaxInt, warm)
	} else if o.WarmupMs > 0 {
		c.closedLoops(o.Concurrency, after(o.WarmupMs), math.MaxInt, warm)
	}
	// The client's own collections stay out of the measured window: off while it runs, one between runs.
	runtime.GC()
	if o.OnWarm {
		send(map[string]bool{"warm": true})
		if !lines.Scan() {
			os.Exit(0)
		}
	}
	rec := newRecorder(o.MaxRequests)
	t0 := time.Now()
	if o.Rate > 0 {
		c.atRate(o.Rate, o.DurationMs, o.MaxRequests, rec)
	} else {
		c.closedLoops(o.Concurrency, after(o.DurationMs), o.MaxRequests, rec)
	}
	seconds := time.Since(t0).Seconds()
	sort.Float64s(rec.latencies)
	sort.Float64s(rec.lags)
	ok := 0
	for status, count := range rec.statuses {
		if status >= 200 && status < 400 {
			ok += count
		}
	}
	n := len(rec.latencies)
	return result{
		Count: n, Ok: ok, Statuses: rec.statuses, Seconds: seconds, Rps: float64(n) / seconds,
		P50: percentile(rec.latencies, 50), P90: percentile(rec.latencies, 90), P99: percentile(rec.latencies, 99),
		Max: percentile(rec.latencies, 100), Warmup: warm.total, Client: "go",
		SendLagP50: percentile(rec.lags, 50), SendLagP99: percentile(rec.lags, 99),
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
