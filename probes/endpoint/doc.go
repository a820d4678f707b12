// Package endpoint is the probe family that reads instrumented data
// loaders over their debug endpoint (the loader protocol,
// docs/architecture.md §6): Attach fetches one loader's /metrics
// (attach.go, stages.go), Loader turns its counters into the frame's loader
// figures (loader.go), Ranks reads every rank of a job, found by URL or by
// the announcements in the discovery folder (ranks.go, discover.go), and
// Profiler takes CPU profiles of the pacing rank (profiler.go).
//
// It imports the probes framework, internal/expo (the metrics text
// parser), internal/pprofsum (the profile summariser) and sample.
package endpoint
