//go:build scale

package scale

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// counter counts HTTP requests by method and resource: a
// http.RoundTripper wrapped around a client's transport.
type counter struct {
	total atomic.Int64
	// latency sums the time to the response's headers of requests that
	// are not watches, timed of them.
	latency, timed atomic.Int64
	mu             sync.Mutex
	by             map[string]int64
}

func newCounter() *counter { return &counter{by: map[string]int64{}} }

func (c *counter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		c.total.Add(1)
		key := req.Method + " " + resourceOf(req)
		c.mu.Lock()
		c.by[key]++
		c.mu.Unlock()
		if req.URL.Query().Get("watch") == "true" {
			return rt.RoundTrip(req)
		}
		start := time.Now()
		resp, err := rt.RoundTrip(req)
		c.latency.Add(int64(time.Since(start)))
		c.timed.Add(1)
		return resp, err
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// resourceOf names a request's resource (and subresource) from its path:
// /api/v1/nodes/x/status → nodes/status; a watch is marked.
func resourceOf(req *http.Request) string {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	// /api/v1/... or /apis/group/version/...
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return req.URL.Path
	}
	if len(parts) >= 2 && parts[0] == "namespaces" && len(parts) > 2 {
		parts = parts[2:]
	}
	res := ""
	switch len(parts) {
	case 0:
		res = "(discovery)"
	case 1, 2:
		res = parts[0]
	default:
		res = parts[0] + "/" + parts[2]
	}
	if req.URL.Query().Get("watch") == "true" {
		res += " (watch)"
	}
	return res
}

func (c *counter) snapshot() (int64, map[string]int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.by))
	for k, v := range c.by {
		out[k] = v
	}
	return c.total.Load(), out
}

// scrapeText reads a Prometheus text endpoint.
func scrapeText(hc *http.Client, url string) (string, error) {
	resp, err := hc.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(b), err
}

// metricSum sums the samples of a metric whose labels contain every
// filter (e.g. `verb="GET"`), and also returns them grouped by key(labels)
// (nil for none).
func metricSum(text, name string, key func(labels string) string, filters ...string) (float64, map[string]float64) {
	total, by := 0.0, map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) || strings.HasPrefix(line, "#") {
			continue
		}
		rest := line[len(name):]
		labels := ""
		switch {
		case strings.HasPrefix(rest, "{"):
			end := strings.Index(rest, "}")
			if end < 0 {
				continue
			}
			labels, rest = rest[1:end], rest[end+1:]
		case strings.HasPrefix(rest, " "):
		default:
			continue // another metric with this prefix
		}
		ok := true
		for _, f := range filters {
			ok = ok && strings.Contains(labels, f)
		}
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			continue
		}
		total += v
		if key != nil {
			by[key(labels)] += v
		}
	}
	return total, by
}

func labelValue(labels, name string) string {
	for _, kv := range strings.Split(labels, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}

// procStat is a process's CPU time (user + system) and its resident memory
// now and at its peak, from /proc.
type procStat struct {
	cpu      time.Duration
	rss, hwm int64 // bytes
}

func readProc(pid int) (procStat, error) {
	var out procStat
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return out, err
	}
	// Fields after the command name (which may hold spaces) in parentheses.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndex(s, ")")+2:])
	if len(fields) < 13 {
		return out, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	out.cpu = time.Duration(utime+stime) * time.Second / 100 // USER_HZ
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return out, err
	}
	for _, line := range strings.Split(string(st), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && (f[0] == "VmRSS:" || f[0] == "VmHWM:") {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			if f[0] == "VmRSS:" {
				out.rss = kb << 10
			} else {
				out.hwm = kb << 10
			}
		}
	}
	return out, nil
}

// children finds this process's child processes by command name
// (kube-apiserver and etcd, started by envtest).
func children(names ...string) map[string]int {
	out := map[string]int{}
	entries, _ := os.ReadDir("/proc")
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(b)
		open, end := strings.Index(s, "("), strings.LastIndex(s, ")")
		if open < 0 || end < 0 {
			continue
		}
		comm := s[open+1 : end]
		fields := strings.Fields(s[end+2:])
		if len(fields) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		if ppid != self {
			continue
		}
		for _, n := range names {
			if strings.HasPrefix(n, comm) || comm == n {
				out[n] = pid
			}
		}
	}
	return out
}

// topN formats the largest entries of a count map, per node.
func topN(m map[string]float64, n int, per float64) string {
	type kv struct {
		k string
		v float64
	}
	var all []kv
	for k, v := range m {
		if v > 0 {
			all = append(all, kv{k, v})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v > all[j].v || all[i].v == all[j].v && all[i].k < all[j].k })
	var parts []string
	for i, e := range all {
		if i == n {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %.1f", e.k, e.v/per))
	}
	return strings.Join(parts, ", ")
}
