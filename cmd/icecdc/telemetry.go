package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	otelprom "go.opentelemetry.io/contrib/bridges/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/prometheus/client_golang/prometheus"
)

// TelemetryConfig is telemetry: OpenTelemetry export over OTLP, off
// unless an endpoint is set, here or in the environment as OTel's SDKs
// take it (OTEL_EXPORTER_OTLP_ENDPOINT and the per-signal
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_METRICS_ENDPOINT).
type TelemetryConfig struct {
	OTLP struct {
		// Endpoint is the collector's base URL, as
		// OTEL_EXPORTER_OTLP_ENDPOINT: http://host:4318 (the signal's path,
		// /v1/traces or /v1/metrics, is appended over HTTP), or
		// http://host:4317 with protocol grpc; https for TLS.
		Endpoint string `yaml:"endpoint"`
		// Protocol is http/protobuf (default) or grpc; default
		// OTEL_EXPORTER_OTLP_PROTOCOL.
		Protocol string `yaml:"protocol"`
		// Headers are sent with every export (an API key), beside
		// OTEL_EXPORTER_OTLP_HEADERS.
		Headers map[string]string `yaml:"headers"`
		// Traces and Metrics choose the signals (default both).
		Traces  *bool `yaml:"traces"`
		Metrics *bool `yaml:"metrics"`
		// MetricsInterval is the time between two metric exports
		// (default OTEL_METRIC_EXPORT_INTERVAL, else 60s).
		MetricsInterval time.Duration `yaml:"metrics_interval"`
	} `yaml:"otlp"`
}

// OTLP protocols.
const (
	otlpHTTP = "http/protobuf"
	otlpGRPC = "grpc"
)

// telemetryEnv is what the environment says of OTLP export.
type telemetryEnv struct {
	endpoint, traces, metrics string // OTEL_EXPORTER_OTLP_[TRACES_|METRICS_]ENDPOINT
	protocol                  string
	disabled                  bool // OTEL_SDK_DISABLED=true
	noTraces, noMetrics       bool // OTEL_TRACES_EXPORTER / OTEL_METRICS_EXPORTER = none
}

func readTelemetryEnv(getenv func(string) string) telemetryEnv {
	return telemetryEnv{
		endpoint:  getenv("OTEL_EXPORTER_OTLP_ENDPOINT"),
		traces:    getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
		metrics:   getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"),
		protocol:  getenv("OTEL_EXPORTER_OTLP_PROTOCOL"),
		disabled:  strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true"),
		noTraces:  strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")) == "none",
		noMetrics: strings.TrimSpace(getenv("OTEL_METRICS_EXPORTER")) == "none",
	}
}

// check returns the section's problems.
func (t *TelemetryConfig) check() []error {
	var errs []error
	o := &t.OTLP
	if o.Endpoint != "" {
		u, err := url.Parse(o.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("config: telemetry.otlp.endpoint: %q: want http://host:port or https://host:port", o.Endpoint))
		}
	}
	switch o.Protocol {
	case "", otlpHTTP, otlpGRPC:
	default:
		errs = append(errs, fmt.Errorf("config: telemetry.otlp.protocol: %q: want %s or %s", o.Protocol, otlpHTTP, otlpGRPC))
	}
	if o.MetricsInterval < 0 {
		errs = append(errs, errors.New("config: telemetry.otlp.metrics_interval: must not be negative"))
	}
	return errs
}

// telemetry is the daemon's OTLP export while it runs.
type telemetry struct {
	// Tracer is the pipeline's tracer provider; nil: no traces.
	Tracer trace.TracerProvider
	stop   []func(context.Context) error
}

// Shutdown sends what is buffered and stops the exporters.
func (t *telemetry) Shutdown(ctx context.Context) error {
	var errs []error
	for _, f := range t.stop {
		errs = append(errs, f(ctx))
	}
	return errors.Join(errs...)
}

// telemetryShutdownTimeout bounds the last export when the daemon stops.
const telemetryShutdownTimeout = 5 * time.Second

// startTelemetry starts OTLP export as cfg and env say: traces of the
// pipeline's commits, and the metrics of reg (the registry /metrics
// serves) read through OpenTelemetry's Prometheus bridge. It returns a
// telemetry with no tracer when export is off.
func startTelemetry(ctx context.Context, cfg *Config, env telemetryEnv, reg prometheus.Gatherer, log *slog.Logger) (*telemetry, error) {
	t := &telemetry{}
	o := &cfg.Telemetry.OTLP
	if env.disabled {
		return t, nil
	}
	traces := (o.Traces == nil || *o.Traces) && !env.noTraces && (o.Endpoint != "" || env.endpoint != "" || env.traces != "")
	metrics := (o.Metrics == nil || *o.Metrics) && !env.noMetrics && (o.Endpoint != "" || env.endpoint != "" || env.metrics != "")
	if !traces && !metrics {
		return t, nil
	}
	protocol := o.Protocol
	if protocol == "" {
		protocol = env.protocol
	}
	if protocol == "" {
		protocol = otlpHTTP
	}
	if protocol != otlpHTTP && protocol != otlpGRPC {
		return nil, fmt.Errorf("telemetry: OTEL_EXPORTER_OTLP_PROTOCOL %q: icecdc exports with %s or %s", protocol, otlpHTTP, otlpGRPC)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "icecdc"), attribute.String("service.version", version),
			attribute.String("icecdc.pipeline", cfg.Name)),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
		resource.WithTelemetrySDK(), resource.WithHost())
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	if traces {
		exp, err := traceExporter(ctx, protocol, o.Endpoint, o.Headers)
		if err != nil {
			return nil, err
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		t.Tracer = tp
		t.stop = append(t.stop, tp.Shutdown)
	}
	if metrics {
		exp, err := metricExporter(ctx, protocol, o.Endpoint, o.Headers)
		if err != nil {
			t.Shutdown(ctx)
			return nil, err
		}
		opts := []sdkmetric.PeriodicReaderOption{sdkmetric.WithProducer(otelprom.NewMetricProducer(otelprom.WithGatherer(reg)))}
		if o.MetricsInterval > 0 {
			opts = append(opts, sdkmetric.WithInterval(o.MetricsInterval))
		}
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, opts...)), sdkmetric.WithResource(res))
		t.stop = append(t.stop, mp.Shutdown)
	}
	log.Info("telemetry: exporting over OTLP", "traces", traces, "metrics", metrics, "protocol", protocol,
		"endpoint", cmp.Or(redactedEndpoint(o.Endpoint), "(from OTEL_EXPORTER_OTLP_*)"))
	return t, nil
}

// redactedEndpoint is the endpoint without user info or query, for logs.
func redactedEndpoint(e string) string {
	u, err := url.Parse(e)
	if err != nil || e == "" {
		return e
	}
	return u.Scheme + "://" + u.Host + u.Path
}

// signalURL is endpoint with the signal's path appended, as the SDKs
// append it to OTEL_EXPORTER_OTLP_ENDPOINT.
func signalURL(endpoint, path string) string {
	return strings.TrimSuffix(endpoint, "/") + path
}

func traceExporter(ctx context.Context, protocol, endpoint string, headers map[string]string) (sdktrace.SpanExporter, error) {
	var exp sdktrace.SpanExporter
	var err error
	if protocol == otlpGRPC {
		var opts []otlptracegrpc.Option
		if endpoint != "" {
			opts = append(opts, otlptracegrpc.WithEndpointURL(endpoint))
		}
		if len(headers) > 0 {
			opts = append(opts, otlptracegrpc.WithHeaders(headers))
		}
		exp, err = otlptracegrpc.New(ctx, opts...)
	} else {
		var opts []otlptracehttp.Option
		if endpoint != "" {
			opts = append(opts, otlptracehttp.WithEndpointURL(signalURL(endpoint, "/v1/traces")))
		}
		if len(headers) > 0 {
			opts = append(opts, otlptracehttp.WithHeaders(headers))
		}
		exp, err = otlptracehttp.New(ctx, opts...)
	}
	if err != nil {
		return nil, fmt.Errorf("telemetry: trace exporter: %w", err)
	}
	return exp, nil
}

func metricExporter(ctx context.Context, protocol, endpoint string, headers map[string]string) (sdkmetric.Exporter, error) {
	var exp sdkmetric.Exporter
	var err error
	if protocol == otlpGRPC {
		var opts []otlpmetricgrpc.Option
		if endpoint != "" {
			opts = append(opts, otlpmetricgrpc.WithEndpointURL(endpoint))
		}
		if len(headers) > 0 {
			opts = append(opts, otlpmetricgrpc.WithHeaders(headers))
		}
		exp, err = otlpmetricgrpc.New(ctx, opts...)
	} else {
		var opts []otlpmetrichttp.Option
		if endpoint != "" {
			opts = append(opts, otlpmetrichttp.WithEndpointURL(signalURL(endpoint, "/v1/metrics")))
		}
		if len(headers) > 0 {
			opts = append(opts, otlpmetrichttp.WithHeaders(headers))
		}
		exp, err = otlpmetrichttp.New(ctx, opts...)
	}
	if err != nil {
		return nil, fmt.Errorf("telemetry: metric exporter: %w", err)
	}
	return exp, nil
}

// stopTelemetry sends what is left, within telemetryShutdownTimeout.
func stopTelemetry(t *telemetry, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), telemetryShutdownTimeout)
	defer cancel()
	if err := t.Shutdown(ctx); err != nil {
		log.Warn("telemetry: the last export failed", "error", err)
	}
}

// osTelemetryEnv is the process's environment for startTelemetry.
func osTelemetryEnv() telemetryEnv { return readTelemetryEnv(os.Getenv) }
