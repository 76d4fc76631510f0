// grpc-health answers as agnhost's grpc-health-checking does, for upstream's gRPC probe cases:
// the gRPC health service on --port, SERVING until --delay-unhealthy-sec have passed (never, when
// negative) and NOT_SERVING after, NOT_FOUND for any service but --service, and on --http-port
// /make-not-serving and /make-serving, which force the answer either way.
//
// The testkit builds it offline against the grpc modules cri-tools vendors (src/images/go.ts),
// which carry grpc_health_v1 but not grpc's own health server: hence this small one.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// Forced answers from the HTTP endpoints; unforced follows the delay.
const (
	unforced int32 = iota
	forcedServing
	forcedNotServing
)

type health struct {
	grpc_health_v1.UnimplementedHealthServer
	service        string
	started        time.Time
	delayUnhealthy time.Duration // negative: never unhealthy on its own
	forced         atomic.Int32
}

func (h *health) Check(_ context.Context, req *grpc_health_v1.HealthCheckRequest) (*grpc_health_v1.HealthCheckResponse, error) {
	log.Printf("health check for service %q, %v after start", req.GetService(), time.Since(h.started).Round(time.Millisecond))
	if req.GetService() != h.service {
		return nil, status.Error(codes.NotFound, "unknown service")
	}
	serving := h.delayUnhealthy < 0 || time.Since(h.started) < h.delayUnhealthy
	switch h.forced.Load() {
	case forcedServing:
		serving = true
	case forcedNotServing:
		serving = false
	}
	if serving {
		return &grpc_health_v1.HealthCheckResponse{Status: grpc_health_v1.HealthCheckResponse_SERVING}, nil
	}
	return &grpc_health_v1.HealthCheckResponse{Status: grpc_health_v1.HealthCheckResponse_NOT_SERVING}, nil
}

// Watch is left unimplemented, as agnhost leaves it: probes only Check.
func (h *health) Watch(*grpc_health_v1.HealthCheckRequest, grpc_health_v1.Health_WatchServer) error {
	return status.Error(codes.Unimplemented, "unimplemented")
}

func (h *health) force(to int32, what string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		log.Print(what)
		h.forced.Store(to)
		fmt.Fprint(w, time.Since(h.started).String())
	}
}

func main() {
	port := flag.Int("port", 5000, "port of the gRPC health service")
	httpPort := flag.Int("http-port", 8080, "port of /make-serving and /make-not-serving")
	delay := flag.Int("delay-unhealthy-sec", -1, "seconds after which Check answers NOT_SERVING; negative: never")
	service := flag.String("service", "", "the service name Check answers for")
	flag.Parse()

	h := &health{service: *service, started: time.Now(), delayUnhealthy: time.Duration(*delay) * time.Second}
	mux := http.NewServeMux()
	mux.HandleFunc("/make-not-serving", h.force(forcedNotServing, "marked NOT_SERVING"))
	mux.HandleFunc("/make-serving", h.force(forcedServing, "marked SERVING"))
	go func() {
		addr := fmt.Sprintf(":%d", *httpPort)
		log.Printf("HTTP server listening on %s", addr)
		log.Fatal(http.ListenAndServe(addr, mux))
	}()

	addr := fmt.Sprintf(":%d", *port)
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatalf("listen on %s: %v", addr, err)
	}
	server := grpc.NewServer()
	grpc_health_v1.RegisterHealthServer(server, h)
	log.Printf("gRPC health server listening on %s", addr)
	log.Fatal(server.Serve(lis))
}
