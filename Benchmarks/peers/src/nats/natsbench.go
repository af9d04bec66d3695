// natsbench: the peers workload on NATS (sub | pub | ping | pong), with the official client
// github.com/nats-io/nats.go from Debian (golang-github-nats-io-go-nats-dev), built in GOPATH mode
// by Benchmarks/peers/build.sh: nothing is fetched. Flags are -name=value (README.md).
package main

import (
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

var (
	url        = flag.String("url", "nats://127.0.0.1:14222", "server url")
	mode       = flag.String("mode", "", "sub|pub|ping|pong")
	subject    = flag.String("subject", "bench.a", "subject (sub); comma list cycled (pub)")
	endSubj    = flag.String("end-subject", "", "subject for END marker (pub); default first subject")
	n          = flag.Int("n", 1000000, "messages (pub) / measured round trips (ping)")
	warmup     = flag.Int("warmup", 1000, "unmeasured warm-up round trips (ping)")
	size       = flag.Int("size", 256, "payload bytes")
	ready      = flag.String("ready", "", "file created once the server has confirmed the subscription")
	idle       = flag.Duration("idle", 3*time.Second, "sub: stop if no message for this long after the first")
	firstLimit = flag.Duration("first-limit", 60*time.Second, "sub: stop if no first message within this long")
	waitLimit  = 30 * time.Second
	dump       = flag.String("dump", "", "ping: write raw RTTs (ns) here")
)

func now() int64 { return time.Now().UnixNano() }

func emit(v map[string]interface{}) {
	b, _ := json.Marshal(v)
	fmt.Println(string(b))
}

func die(err error) {
	fmt.Fprintln(os.Stderr, "error:", err)
	os.Exit(1)
}

func markReady() {
	if *ready != "" {
		f, err := os.Create(*ready)
		if err != nil {
			die(err)
		}
		f.Close()
	}
}

func main() {
	flag.Parse()
	if *n < 1 || *size < 9 {
		fmt.Fprintln(os.Stderr, "-n must be at least 1 and -size at least 9 (a counter in bytes 1..8)")
		os.Exit(64)
	}
	var asyncErrs int64
	var lastErr atomic.Value
	lastErr.Store("")
	opts := []nats.Option{
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			atomic.AddInt64(&asyncErrs, 1)
			lastErr.Store(err.Error())
		}),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				atomic.AddInt64(&asyncErrs, 1)
				lastErr.Store("disconnect: " + err.Error())
			}
		}),
		nats.NoReconnect(),
	}
	nc, err := nats.Connect(*url, opts...)
	if err != nil {
		die(err)
	}
	defer nc.Close()

	switch *mode {
	case "sub":
		var count, first, last int64
		var gotEnd int32
		done := make(chan struct{})
		sub, err := nc.Subscribe(*subject, func(m *nats.Msg) {
			t := now()
			if len(m.Data) > 0 && m.Data[0] == 'E' {
				if atomic.CompareAndSwapInt32(&gotEnd, 0, 1) {
					close(done)
				}
				return
			}
			if atomic.AddInt64(&count, 1) == 1 {
				atomic.StoreInt64(&first, t)
			}
			atomic.StoreInt64(&last, t)
		})
		if err != nil {
			die(err)
		}
		if err := nc.Flush(); err != nil { // server has processed SUB
			die(err)
		}
		markReady()
		tick := time.NewTicker(50 * time.Millisecond)
		start := time.Now()
	loop:
		for {
			select {
			case <-done:
				break loop
			case <-tick.C:
				if nc.IsClosed() {
					break loop
				}
				l := atomic.LoadInt64(&last)
				if l == 0 {
					if time.Since(start) > *firstLimit {
						break loop
					}
				} else if now()-l > int64(*idle) {
					break loop
				}
			}
		}
		c := atomic.LoadInt64(&count)
		f, l := atomic.LoadInt64(&first), atomic.LoadInt64(&last)
		dropped, _ := sub.Dropped()
		rate := 0.0
		if l > f {
			rate = float64(c-1) / (float64(l-f) / 1e9)
		}
		emit(map[string]interface{}{"role": "sub", "received": c, "first_ns": f, "last_ns": l,
			"end_marker": atomic.LoadInt32(&gotEnd) == 1, "rate": rate, "client_dropped": dropped,
			"async_errors": atomic.LoadInt64(&asyncErrs), "last_error": lastErr.Load()})
	case "pub":
		subs := strings.Split(*subject, ",")
		es := *endSubj
		if es == "" {
			es = subs[0]
		}
		payload := make([]byte, *size)
		for i := range payload {
			payload[i] = 'D'
		}
		ns := len(subs)
		t0 := now()
		for i := 0; i < *n; i++ {
			binary.LittleEndian.PutUint64(payload[1:9], uint64(i))
			if err := nc.Publish(subs[i%ns], payload); err != nil {
				die(err)
			}
		}
		t1 := now()
		if err := nc.FlushTimeout(waitLimit); err != nil {
			die(err)
		}
		t2 := now()
		if err := nc.Publish(es, []byte{'E'}); err != nil {
			die(err)
		}
		if err := nc.FlushTimeout(waitLimit); err != nil {
			die(err)
		}
		emit(map[string]interface{}{"role": "pub", "n": *n, "start_ns": t0, "publish_done_ns": t1,
			"flush_done_ns": t2, "rate": float64(*n) / (float64(t2-t0) / 1e9),
			"async_errors": atomic.LoadInt64(&asyncErrs), "last_error": lastErr.Load()})
	case "pong":
		done := make(chan struct{})
		_, err := nc.Subscribe("ping", func(m *nats.Msg) {
			if len(m.Data) > 0 && m.Data[0] == 'Q' {
				close(done)
				return
			}
			nc.Publish("pong", m.Data)
		})
		if err != nil {
			die(err)
		}
		if err := nc.Flush(); err != nil {
			die(err)
		}
		markReady()
		<-done
		nc.Flush()
	case "ping":
		sub, err := nc.SubscribeSync("pong")
		if err != nil {
			die(err)
		}
		if err := nc.Flush(); err != nil {
			die(err)
		}
		payload := make([]byte, *size)
		for i := range payload {
			payload[i] = 'P'
		}
		rtts := make([]int64, 0, *n)
		for i := 0; i < *warmup+*n; i++ {
			binary.LittleEndian.PutUint64(payload[1:9], uint64(i))
			t := time.Now()
			if err := nc.Publish("ping", payload); err != nil {
				die(err)
			}
			m, err := sub.NextMsg(waitLimit)
			d := time.Since(t)
			if err != nil {
				die(err)
			}
			if binary.LittleEndian.Uint64(m.Data[1:9]) != uint64(i) {
				die(fmt.Errorf("out of sequence pong"))
			}
			if i >= *warmup {
				rtts = append(rtts, int64(d))
			}
		}
		stop := []byte{'Q'}
		nc.Publish("ping", stop)
		nc.Flush()
		if *dump != "" {
			var sb strings.Builder
			for _, r := range rtts {
				fmt.Fprintf(&sb, "%d\n", r)
			}
			os.WriteFile(*dump, []byte(sb.String()), 0644)
		}
		sort.Slice(rtts, func(a, b int) bool { return rtts[a] < rtts[b] })
		pct := func(p float64) float64 {
			k := int(p*float64(len(rtts)) + 0.999999999)
			if k < 1 {
				k = 1
			}
			return float64(rtts[k-1]) / 1000.0
		}
		var sum int64
		for _, r := range rtts {
			sum += r
		}
		emit(map[string]interface{}{"role": "ping", "n": len(rtts), "p50_us": pct(0.5), "p90_us": pct(0.9),
			"p99_us": pct(0.99), "p999_us": pct(0.999), "max_us": float64(rtts[len(rtts)-1]) / 1000.0,
			"mean_us": float64(sum) / float64(len(rtts)) / 1000.0})
	default:
		die(fmt.Errorf("unknown mode %q", *mode))
	}
}
