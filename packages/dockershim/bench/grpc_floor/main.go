// Command grpc-floor times ContainerStatus(verbose) through the CRI client critest uses
// (k8s.io/cri-client/pkg, as vendored by cri-tools v1.33), against several endpoints in turn: the
// dockershim bench's gRPC floor. It is built against cri-tools' vendored modules (testkit's
// goProgramAt, from bench/grpc_floor.ts), so the client side is upstream's code, not ours.
//
//	grpc-floor -calls 200 -parallel 2 -gap 10ms NAME=ENDPOINT#CONTAINER_ID ...
//
// Prints JSON: per target the samples (ms), their p50 and p99, and the size of one response.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	internalapi "k8s.io/cri-api/pkg/apis"
	remote "k8s.io/cri-client/pkg"
)

type target struct {
	name, endpoint, containerID string
	service                     internalapi.RuntimeService
	samples                     []float64
	responseBytes               int
}

type result struct {
	N             int       `json:"n"`
	P50           float64   `json:"p50"`
	P99           float64   `json:"p99"`
	ResponseBytes int       `json:"responseBytes"`
	Samples       []float64 `json:"samples"`
}

// Nearest-rank percentile, as bench/stats.ts.
func percentile(sorted []float64, p float64) float64 {
	rank := int(float64(len(sorted))*p/100 + 0.999999)
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1]
}

func main() {
	calls := flag.Int("calls", 200, "measured calls per target")
	warmup := flag.Int("warmup", 10, "calls per target before measuring")
	parallel := flag.Int("parallel", 2, "calls in flight at once (critest's containersNumberParallel)")
	gap := flag.Duration("gap", 10*time.Millisecond, "pause of each worker between its calls; workers start gap/parallel apart")
	batch := flag.Int("batch", 20, "calls per target before moving to the next (targets interleave)")
	flag.Parse()
	if flag.NArg() == 0 || *parallel < 1 || *batch < 1 {
		fmt.Fprintln(os.Stderr, "usage: grpc-floor [flags] NAME=ENDPOINT#CONTAINER_ID ...")
		os.Exit(2)
	}
	var targets []*target
	for _, arg := range flag.Args() {
		name, rest, ok1 := strings.Cut(arg, "=")
		endpoint, id, ok2 := strings.Cut(rest, "#")
		if !ok1 || !ok2 || name == "" || endpoint == "" || id == "" {
			fmt.Fprintf(os.Stderr, "grpc-floor: bad target %q (want NAME=ENDPOINT#CONTAINER_ID)\n", arg)
			os.Exit(2)
		}
		// critest's own connection (pkg/framework LoadCRIClient): the same constructor, timeout default,
		// and no tracer or logger.
		service, err := remote.NewRemoteRuntimeService(endpoint, 5*time.Minute, nil, nil)
		if err != nil {
			fmt.Fprintf(os.Stderr, "grpc-floor: %s: %v\n", name, err)
			os.Exit(1)
		}
		targets = append(targets, &target{name: name, endpoint: endpoint, containerID: id, service: service})
	}
	for _, t := range targets {
		resp, err := t.service.ContainerStatus(context.TODO(), t.containerID, true)
		if err != nil {
			fmt.Fprintf(os.Stderr, "grpc-floor: %s: ContainerStatus: %v\n", t.name, err)
			os.Exit(1)
		}
		t.responseBytes = resp.Size()
		run(t, *warmup, *parallel, *gap, false)
	}
	for done := 0; done < *calls; done += *batch {
		n := *batch
		if *calls-done < n {
			n = *calls - done
		}
		for _, t := range targets {
			run(t, n, *parallel, *gap, true)
		}
	}
	out := map[string]result{}
	for _, t := range targets {
		sorted := append([]float64(nil), t.samples...)
		sort.Float64s(sorted)
		out[t.name] = result{
			N:             len(sorted),
			P50:           percentile(sorted, 50),
			P99:           percentile(sorted, 99),
			ResponseBytes: t.responseBytes,
			Samples:       t.samples,
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintf(os.Stderr, "grpc-floor: %v\n", err)
		os.Exit(1)
	}
}

// run makes n calls, `parallel` workers taking the next one as they finish, each pausing `gap`
// after its call: critest's calls rarely overlap, so neither do these.
func run(t *target, n, parallel int, gap time.Duration, record bool) {
	var mu sync.Mutex
	next := 0
	var wg sync.WaitGroup
	for w := 0; w < parallel; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			time.Sleep(gap * time.Duration(w) / time.Duration(parallel))
			for {
				mu.Lock()
				if next >= n {
					mu.Unlock()
					return
				}
				next++
				mu.Unlock()
				start := time.Now()
				_, err := t.service.ContainerStatus(context.TODO(), t.containerID, true)
				elapsed := time.Since(start)
				if err != nil {
					fmt.Fprintf(os.Stderr, "grpc-floor: %s: ContainerStatus: %v\n", t.name, err)
					os.Exit(1)
				}
				if record {
					mu.Lock()
					t.samples = append(t.samples, float64(elapsed.Nanoseconds())/1e6)
					mu.Unlock()
				}
				time.Sleep(gap)
			}
		}(w)
	}
	wg.Wait()
}
