// The fields of WorkloadSpec (job/workload_spec.h) as one list, so operator== and its test cannot miss one.
//
// Contract:
//  - DLIO_WORKLOAD_COMPARED_FIELDS(X) expands X(field) for every field operator== compares, in declaration order;
//    DLIO_WORKLOAD_UNCOMPARED_FIELDS(X) for the ones it leaves out on purpose (the S3 secret: never compared, never
//    written by ToYaml). Together they are every field: job/workload_spec_test.cc counts WorkloadSpec's fields and
//    fails when a new one is in neither list, and checks for each listed field that two specs differing only in it
//    compare unequal (the secret: equal).
//  - A new field of WorkloadSpec goes into one of the lists (normally the first), beside its section.
// Thread-safety: macros only.
#pragma once

#define DLIO_WORKLOAD_COMPARED_FIELDS(X)                                                                             \
  /* model, framework */                                                                                            \
  X(model_name) X(model_type) X(model_size_bytes) X(model_datatype) X(optimizer_datatype) X(num_layers)             \
  X(parallelism_tensor) X(parallelism_pipeline) X(zero_stage) X(vocab_size) X(hidden_size) X(ffn_hidden_size)       \
  X(num_attention_heads) X(num_kv_heads) X(optimization_groups) X(layer_parameters) X(parallelism_data)            \
  X(framework)                                                                                                      \
  /* workflow */                                                                                                    \
  X(generate_data) X(train) X(evaluation) X(checkpoint)                                                            \
  /* storage (not the secret) */                                                                                    \
  X(storage_type) X(storage_root) X(s3_endpoint_url) X(s3_region) X(s3_access_key_id) X(s3_force_path_style)        \
  X(s3_max_attempts) X(s3_endpoint_policy) X(storage_library) X(s3_uri_scheme) X(post_generation_settle_seconds)                          \
  /* dataset */                                                                                                     \
  X(data_folder) X(format) X(num_files_train) X(num_samples_per_file) X(record_length_bytes)                        \
  X(record_length_bytes_stdev) X(num_files_eval) X(num_subfolders_train) X(num_subfolders_eval) X(file_prefix)      \
  X(skip_listing) X(listing_validation_interval)                                                                    \
  X(record_dims) X(record_element_type) X(hdf5_chunk_dims) X(hdf5_num_dset_per_record) X(hdf5_max_shape)           \
  X(compression) X(compression_level) X(enable_chunking) X(chunk_size) X(parquet)                                   \
  /* reader */                                                                                                      \
  X(data_loader) X(batch_size) X(batch_size_eval) X(read_threads) X(prefetch_size) X(file_shuffle)                  \
  X(sample_shuffle) X(transfer_size) X(preprocess_time) X(odirect)                                                  \
  /* train, evaluation */                                                                                           \
  X(epochs) X(computation_time) X(seed) X(seed_change_epoch) X(total_training_steps) X(eval_time)                   \
  X(eval_after_epoch) X(epochs_between_evals)                                                                       \
  /* checkpoint */                                                                                                  \
  X(checkpoint_folder) X(checkpoint_after_epoch) X(epochs_between_checkpoints) X(steps_between_checkpoints)         \
  X(checkpoint_fsync) X(time_between_checkpoints) X(num_checkpoints_write) X(num_checkpoints_read)                  \
  X(recovery_rank_shift) X(checkpoint_rank_sync) X(checkpoint_mode) X(checkpoint_type)                             \
  X(checkpoint_randomize_tensor) X(checkpoint_evict_cache) X(checkpoint_bandwidth_limit)                            \
  /* output, metric, dlio_ext */                                                                                    \
  X(output_folder) X(exclude_start_steps) X(exclude_end_steps) X(au_threshold) X(io_engine)                         \
  X(read_bandwidth_limit) X(trace) X(trace_events_per_thread) X(evict_cache) X(read_type) X(hdf5_engine)            \
  X(telemetry_interval) X(s3_requests_in_flight) X(barrier) X(barrier_fanout) X(barrier_tree_min_agents)

#define DLIO_WORKLOAD_UNCOMPARED_FIELDS(X) X(s3_secret_access_key)
