package sample

// Series is one Prometheus series the exporter serves (docs/prometheus.md):
// its name, help, variable labels and, for the series other tools read
// back (fleet/), the range a sane value lies in. The exporter builds its
// descriptions from these; fleet/ queries by them, so a rename is one
// edit and cannot break the fleet silently.
type Series struct {
	Name, Help string
	Labels     []string
	// Min and Max bound a value read back; both 0 where nothing reads it.
	Min, Max float64
	// Counter marks a value that only grows (its name ends in _total):
	// the exporter serves it as a counter, so rate() applies; the others
	// are gauges.
	Counter bool
}

// The exporter's series.
var (
	SeriesVerdict                             = Series{Name: "gpuwatch_verdict", Help: "1 for the verdict shown now, 0 for the others; the job's identity where it is known (slurm_job, not job: Prometheus owns that label).", Labels: []string{"kind", "slurm_job", "slurm_step", "rank", "pod", "namespace"}, Min: 1, Max: 1}
	SeriesVerdictConfidenceRatio              = Series{Name: "gpuwatch_verdict_confidence_ratio", Help: "Confidence of the verdict shown now, 0–1.", Min: 0, Max: 1}
	SeriesAdviceChange                        = Series{Name: "gpuwatch_advice_change", Help: "1 for each loader setting the verdict's pipeline model advises changing.", Labels: []string{"knob", "from", "to"}}
	SeriesCause                               = Series{Name: "gpuwatch_cause", Help: "1 for each cause the verdict names beneath its kind (docs/diagnosis.md, \"Causes\"): the input pipeline's (decode, small_files …) and the GPU-bound step's (tensor_idle, launch_bound, host_sync …); absent where none is named.", Labels: []string{"cause"}, Min: 1, Max: 1}
	SeriesCauseBoundRatio                     = Series{Name: "gpuwatch_cause_bound_ratio", Help: "The most the cause's fix can speed the job, over its rate now: with the fix's stages free (the input pipeline's causes) or the step's bound (the GPU's: a ratio of dense peaks, Amdahl over the step's profile); absent where the cause has no bound (its bound_why in the JSON frame says why).", Labels: []string{"cause"}}
	SeriesAdvicePredictedSamplesPerSecond     = Series{Name: "gpuwatch_advice_predicted_samples_per_second", Help: "Samples per second the model predicts once the advised changes are applied: the low side of its range (contended), the point; absent where the prediction is relative to a rate not read (a sampled loop)."}
	SeriesAdvicePredictedHighSamplesPerSecond = Series{Name: "gpuwatch_advice_predicted_high_samples_per_second", Help: "The high side of the predicted range: samples per second with no contention beyond what was measured; absent where the point is."}
	SeriesAdvicePredictedWaitShareRatio       = Series{Name: "gpuwatch_advice_predicted_wait_share_ratio", Help: "Wait share the model predicts once the advised changes are applied, 0–1."}
	SeriesVerdictSinceTimestampSeconds        = Series{Name: "gpuwatch_verdict_since_timestamp_seconds", Help: "When the verdict shown now started, Unix time."}
	SeriesFrameTimestampSeconds               = Series{Name: "gpuwatch_frame_timestamp_seconds", Help: "When the latest frame was taken, Unix time."}
	SeriesCpuBusyRatio                        = Series{Name: "gpuwatch_cpu_busy_ratio", Help: "Share of the machine's CPU time busy (not idle, not iowait), 0–1."}
	SeriesCpuIowaitRatio                      = Series{Name: "gpuwatch_cpu_iowait_ratio", Help: "Share of CPU time idle waiting on I/O, 0–1."}
	SeriesCpuCoreBusyRatio                    = Series{Name: "gpuwatch_cpu_core_busy_ratio", Help: "Share of one logical CPU's time busy, 0–1.", Labels: []string{"core"}}
	SeriesCpuProcsRunning                     = Series{Name: "gpuwatch_cpu_procs_running", Help: "Runnable tasks."}
	SeriesMemoryAvailableBytes                = Series{Name: "gpuwatch_memory_available_bytes", Help: "Memory available for new work."}
	SeriesMemoryUsedBytes                     = Series{Name: "gpuwatch_memory_used_bytes", Help: "Memory used (total − available)."}
	SeriesSwapInPagesPerSecond                = Series{Name: "gpuwatch_swap_in_pages_per_second", Help: "Pages swapped in per second over the last interval."}
	SeriesSwapOutPagesPerSecond               = Series{Name: "gpuwatch_swap_out_pages_per_second", Help: "Pages swapped out per second over the last interval."}
	SeriesDiskReadBytesPerSecond              = Series{Name: "gpuwatch_disk_read_bytes_per_second", Help: "Bytes read per second over the last interval.", Labels: []string{"device"}}
	SeriesDiskWriteBytesPerSecond             = Series{Name: "gpuwatch_disk_write_bytes_per_second", Help: "Bytes written per second over the last interval.", Labels: []string{"device"}}
	SeriesDiskBusyRatio                       = Series{Name: "gpuwatch_disk_busy_ratio", Help: "Share of the interval with a request in flight (iostat %util), 0–1.", Labels: []string{"device"}}
	SeriesPressureSomeRatio                   = Series{Name: "gpuwatch_pressure_some_ratio", Help: "Share of the last interval some task stalled on the resource (PSI; the kernel's 10 s average on the first reading), 0–1.", Labels: []string{"resource"}}
	SeriesGpuUtilizationRatio                 = Series{Name: "gpuwatch_gpu_utilization_ratio", Help: "GPU utilization as the driver reports it, 0–1.", Labels: []string{"gpu", "name"}, Min: 0, Max: 1}
	SeriesGpuUtilizationP5Ratio               = Series{Name: "gpuwatch_gpu_utilization_p5_ratio", Help: "5th percentile of the driver's utilization samples in the last interval, 0–1.", Labels: []string{"gpu", "name"}}
	SeriesGpuUtilizationP95Ratio              = Series{Name: "gpuwatch_gpu_utilization_p95_ratio", Help: "95th percentile of the driver's utilization samples in the last interval, 0–1.", Labels: []string{"gpu", "name"}}
	SeriesGpuMemoryUsedBytes                  = Series{Name: "gpuwatch_gpu_memory_used_bytes", Help: "GPU memory used.", Labels: []string{"gpu", "name"}}
	SeriesGpuPowerWatts                       = Series{Name: "gpuwatch_gpu_power_watts", Help: "GPU power draw.", Labels: []string{"gpu", "name"}}
	SeriesGpuTemperatureCelsius               = Series{Name: "gpuwatch_gpu_temperature_celsius", Help: "GPU temperature.", Labels: []string{"gpu", "name"}}
	SeriesGpuProcessMemoryUsedBytes           = Series{Name: "gpuwatch_gpu_process_memory_used_bytes", Help: "GPU memory a process holds (the largest 64 processes).", Labels: []string{"gpu", "pid"}}
	SeriesGpuSmActivityRatio                  = Series{Name: "gpuwatch_gpu_sm_activity_ratio", Help: "GPM SM activity over the last interval (share of time the SMs had a warp resident; Hopper and later), 0–1.", Labels: []string{"gpu", "name"}}
	SeriesGpuSmOccupancyRatio                 = Series{Name: "gpuwatch_gpu_sm_occupancy_ratio", Help: "GPM SM occupancy over the last interval (warps resident of the maximum), 0–1.", Labels: []string{"gpu", "name"}}
	SeriesGpuTensorActivityRatio              = Series{Name: "gpuwatch_gpu_tensor_activity_ratio", Help: "GPM tensor-core activity over the last interval, any precision, 0–1.", Labels: []string{"gpu", "name"}}
	SeriesGpuTensorPipeActivityRatio          = Series{Name: "gpuwatch_gpu_tensor_pipe_activity_ratio", Help: "GPM tensor-core activity by instruction over the last interval (hmma: fp16/bf16/tf32, imma: int8, dfma: fp64), 0–1.", Labels: []string{"gpu", "name", "pipe"}}
	SeriesGpuFpPipeActivityRatio              = Series{Name: "gpuwatch_gpu_fp_pipe_activity_ratio", Help: "GPM activity of the non-tensor floating-point pipes over the last interval, by precision (fp16, fp32, fp64), 0–1.", Labels: []string{"gpu", "name", "precision"}}
	SeriesGpuDramBandwidthRatio               = Series{Name: "gpuwatch_gpu_dram_bandwidth_ratio", Help: "GPM DRAM bandwidth used over the last interval, of the peak, 0–1.", Labels: []string{"gpu", "name"}}
	SeriesGpuDensePeakOpsPerSecond            = Series{Name: "gpuwatch_gpu_dense_peak_ops_per_second", Help: "The GPU model's published dense (not sparse) peak, by dtype, in floating-point operations per second (int8: integer operations); absent for a model gpuwatch does not know.", Labels: []string{"gpu", "name", "dtype"}}
	SeriesGpuAchievedOpsPerSecond             = Series{Name: "gpuwatch_gpu_achieved_ops_per_second", Help: "The step's achieved matmul rate over the last interval, an estimate: the tensor cores' GPM activity (HMMA's) × the model's dense peak for the dtype, in operations per second. Label dtype: the dtype the hook read the step computing in (bf16, fp16, tf32), bound low and high then equal; unread where it read none (no hook, or not the loop's GPU): low at TF32's peak, high at bf16's (fp16's without bf16). Absent without GPM or a peak, and for a step in plain fp32 (its matmuls are not on the tensor cores).", Labels: []string{"gpu", "name", "dtype", "bound"}}
	SeriesVirtualAcceleratorBusyRatio         = Series{Name: "gpuwatch_virtual_accelerator_busy_ratio", Help: "The watched loader's step time / wall time less the time its loop's thread waited for a CPU, 0–1 (no GPU signal; docs/json.md, accel.busy_pct)."}
	SeriesLoaderWaitRatio                     = Series{Name: "gpuwatch_loader_wait_ratio", Help: "Share of the training loop's time waiting for the next batch, 0–1.", Min: 0, Max: 1}
	SeriesLoaderSamplesPerSecond              = Series{Name: "gpuwatch_loader_samples_per_second", Help: "Samples the loader handed out per second.", Min: 0, Max: 1e12}
	SeriesLoaderQueueDepth                    = Series{Name: "gpuwatch_loader_queue_depth", Help: "Batches ready when the training loop last asked."}
	SeriesLoaderWaitingSeconds                = Series{Name: "gpuwatch_loader_waiting_seconds", Help: "How long the training loop had waited for the batch it asked for when the loader was read (0: not waiting); a loop stuck in next() grows it."}
	SeriesLoaderWaitP95Seconds                = Series{Name: "gpuwatch_loader_wait_p95_seconds", Help: "95th percentile of the time waited per batch in the last interval."}
	SeriesLoaderStageSeconds                  = Series{Name: "gpuwatch_loader_stage_seconds", Help: "A batch's time in one pipeline stage over the last interval (workers: getitem, collate, handover; training process: take, pin, step, first_batch).", Labels: []string{"stage"}}
	SeriesLoaderStageWorkerRatio              = Series{Name: "gpuwatch_loader_stage_worker_ratio", Help: "A worker stage's share of a worker's time per batch, 0–1.", Labels: []string{"stage"}}
	SeriesLoaderBatchBytes                    = Series{Name: "gpuwatch_loader_batch_bytes", Help: "Bytes of tensors in a batch the training loop receives (the batches the hook looked inside)."}
	SeriesLoaderBatchFloat64Ratio             = Series{Name: "gpuwatch_loader_batch_float64_ratio", Help: "Share of a batch's tensor bytes that are float64, 0–1."}
	SeriesLoaderPaddingRatio                  = Series{Name: "gpuwatch_loader_padding_ratio", Help: "Share of a batch's token-tensor elements that are padding, 0–1."}
	SeriesLoaderCopyHostSeconds               = Series{Name: "gpuwatch_loader_copy_host_seconds", Help: "The training loop's time per batch in its copies of the batch to the GPU (tensor.to, tensor.cuda), from the batches the hook looked inside.", Min: 0, Max: 1e6}
	SeriesLoaderCopyBytesPerSecond            = Series{Name: "gpuwatch_loader_copy_bytes_per_second", Help: "The rate of those copies on the GPU: their bytes over their time between CUDA events; absent where not read.", Min: 0, Max: 1e15}
	SeriesLoaderWorkersRunDelayRatio          = Series{Name: "gpuwatch_loader_workers_run_delay_ratio", Help: "Share of the loader workers' running-or-runnable time spent waiting for a CPU, 0–1."}
	SeriesLoaderCeilingSamplesPerSecond       = Series{Name: "gpuwatch_loader_ceiling_samples_per_second", Help: "Samples per second the training loop took with its input free (the hook's measured ceiling: gpuwatch run --ceiling); absent until measured.", Min: 0, Max: 1e12}
	SeriesLoaderMFURatio                      = Series{Name: "gpuwatch_loader_mfu_ratio", Help: "Model FLOPs utilization of the training step: the model's FLOPs a step as the hook counted them × steps per second over the dense peak of the loop's GPU for the dtype the step computes in (label dtype: bf16, fp16, tf32, fp32), 0–1; absent where any part was not read.", Labels: []string{"dtype"}, Min: 0, Max: maxMFU}
	SeriesLoaderInputCostRatio                = Series{Name: "gpuwatch_loader_input_cost_ratio", Help: "Share of the measured ceiling the input costs now (1 − samples per second now ÷ the ceiling), 0–1; absent until measured.", Min: 0, Max: 1}
	SeriesRankUp                              = Series{Name: "gpuwatch_rank_up", Help: "1 while the rank's loader answers, 0 while it does not (several ranks attached).", Labels: []string{"rank", "loader", "world_size"}, Min: 0, Max: 1}
	SeriesRankWaitRatio                       = Series{Name: "gpuwatch_rank_wait_ratio", Help: "Share of the rank's training-loop time waiting for its next batch, 0–1.", Labels: []string{"rank", "loader", "world_size"}, Min: 0, Max: 1}
	SeriesRankStepSeconds                     = Series{Name: "gpuwatch_rank_step_seconds", Help: "The rank's mean step (in a synchronous job it includes waiting for the other ranks in the all-reduce).", Labels: []string{"rank", "loader", "world_size"}, Min: 0, Max: 1e6}
	SeriesRankSamplesPerSecond                = Series{Name: "gpuwatch_rank_samples_per_second", Help: "Samples the rank's loader handed out per second.", Labels: []string{"rank", "loader", "world_size"}, Min: 0, Max: 1e12}
	SeriesRankStraggler                       = Series{Name: "gpuwatch_rank_straggler", Help: "1 for the rank the verdict names as holding the job back, 0 for the others.", Labels: []string{"rank", "loader", "world_size"}, Min: 0, Max: 1}
	SeriesSelfCPUSecondsTotal                 = Series{Name: "gpuwatch_self_cpu_seconds_total", Help: "CPU time gpuwatch itself has used since it started, user and system, all its threads (rate() is its share of a core).", Counter: true}
	SeriesSelfResidentBytes                   = Series{Name: "gpuwatch_self_resident_bytes", Help: "gpuwatch's own resident memory."}
	SeriesSelfTickSeconds                     = Series{Name: "gpuwatch_self_tick_seconds", Help: "Wall time of the sampler's latest tick: from handing the probes their call to the frame assembled."}
	SeriesHookCPURatio                        = Series{Name: "gpuwatch_hook_cpu_ratio", Help: "CPU time the hook's own instrumentation took inside the training process per wall second over the interval (its threads' clocks), in cores: 0.003 is 0.3 % of one.", Min: 0, Max: 1e4}
	SeriesHookCPUSecondsPerSample             = Series{Name: "gpuwatch_hook_cpu_seconds_per_sample", Help: "That CPU time per sample the loader handed out; absent without samples.", Min: 0, Max: 1e3}
	SeriesHookCPUSecondsPerBatch              = Series{Name: "gpuwatch_hook_cpu_seconds_per_batch", Help: "That CPU time per batch, where the loader's samples are not counted (batches without a known size): it stands in for the figure per sample; absent otherwise.", Min: 0, Max: 1e3}
	SeriesHookPartCPURatio                    = Series{Name: "gpuwatch_hook_part_cpu_ratio", Help: "Of the hook's CPU time per wall second, one part's (label part: loop, payload, settings, syncs, stages, profiler, gpu_profile, server), in cores.", Labels: []string{"part"}, Min: 0, Max: 1e4}
	SeriesHookPartCPUSecondsPerSample         = Series{Name: "gpuwatch_hook_part_cpu_seconds_per_sample", Help: "That part's CPU time per sample the loader handed out; absent without samples.", Labels: []string{"part"}, Min: 0, Max: 1e3}
	SeriesHookPartCPUSecondsPerBatch          = Series{Name: "gpuwatch_hook_part_cpu_seconds_per_batch", Help: "That part's CPU time per batch, where the loader's samples are not counted; absent otherwise.", Labels: []string{"part"}, Min: 0, Max: 1e3}
	SeriesSlurmJobInfo                        = Series{Name: "gpuwatch_slurm_job_info", Help: "1 for each Slurm job a prolog mapped on this node (serve --slurm-job-dir): its user and GPU indices.", Labels: []string{"slurm_job", "user", "gpus"}}
	SeriesSlurmJobMappingRejected             = Series{Name: "gpuwatch_slurm_job_mapping_rejected", Help: "Files in serve's --slurm-job-dir refused at the last scrape (not a job ID, not a regular file, too large, a bad value)."}
)

// AllSeries is every series the exporter serves, in its order.
var AllSeries = []Series{SeriesVerdict, SeriesVerdictConfidenceRatio, SeriesAdviceChange, SeriesCause, SeriesCauseBoundRatio, SeriesAdvicePredictedSamplesPerSecond, SeriesAdvicePredictedHighSamplesPerSecond, SeriesAdvicePredictedWaitShareRatio, SeriesVerdictSinceTimestampSeconds, SeriesFrameTimestampSeconds, SeriesCpuBusyRatio, SeriesCpuIowaitRatio, SeriesCpuCoreBusyRatio, SeriesCpuProcsRunning, SeriesMemoryAvailableBytes, SeriesMemoryUsedBytes, SeriesSwapInPagesPerSecond, SeriesSwapOutPagesPerSecond, SeriesDiskReadBytesPerSecond, SeriesDiskWriteBytesPerSecond, SeriesDiskBusyRatio, SeriesPressureSomeRatio, SeriesGpuUtilizationRatio, SeriesGpuUtilizationP5Ratio, SeriesGpuUtilizationP95Ratio, SeriesGpuMemoryUsedBytes, SeriesGpuPowerWatts, SeriesGpuTemperatureCelsius, SeriesGpuProcessMemoryUsedBytes, SeriesGpuSmActivityRatio, SeriesGpuSmOccupancyRatio, SeriesGpuTensorActivityRatio, SeriesGpuTensorPipeActivityRatio, SeriesGpuFpPipeActivityRatio, SeriesGpuDramBandwidthRatio, SeriesGpuDensePeakOpsPerSecond, SeriesGpuAchievedOpsPerSecond, SeriesVirtualAcceleratorBusyRatio, SeriesLoaderWaitRatio, SeriesLoaderSamplesPerSecond, SeriesLoaderQueueDepth, SeriesLoaderWaitingSeconds, SeriesLoaderWaitP95Seconds, SeriesLoaderStageSeconds, SeriesLoaderStageWorkerRatio, SeriesLoaderBatchBytes, SeriesLoaderBatchFloat64Ratio, SeriesLoaderPaddingRatio, SeriesLoaderCopyHostSeconds, SeriesLoaderCopyBytesPerSecond, SeriesLoaderWorkersRunDelayRatio, SeriesLoaderCeilingSamplesPerSecond, SeriesLoaderInputCostRatio, SeriesLoaderMFURatio, SeriesRankUp, SeriesRankWaitRatio, SeriesRankStepSeconds, SeriesRankSamplesPerSecond, SeriesRankStraggler, SeriesSelfCPUSecondsTotal, SeriesSelfResidentBytes, SeriesSelfTickSeconds, SeriesHookCPURatio, SeriesHookCPUSecondsPerSample, SeriesHookCPUSecondsPerBatch, SeriesHookPartCPURatio, SeriesHookPartCPUSecondsPerSample, SeriesHookPartCPUSecondsPerBatch, SeriesSlurmJobInfo, SeriesSlurmJobMappingRejected}
