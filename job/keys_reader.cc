// The rows of the key table (key_table.h) for the reader section (alias data_reader).
#include "job/format_traits.h"
#include "job/key_table.h"

namespace dlio::workload_internal {

// Data table: the reader section's rows after the shuffles (AddReaderKeys adds them last).
void AddReaderAccessKeys(std::vector<KeyInfo>& v);

// Data table: the reader section.
void AddReaderKeys(std::vector<KeyInfo>& v) {
  v.push_back(Custom(
      "reader.data_loader", KeyStatus::kLabel,
      "pytorch, tensorflow, dali; the access pattern follows dataset.format (tfrecord streams files, the others "
      "read samples by index); DLIO's native_dali, custom, none, synthetic, daos_pytorch are not supported yet",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        return ParseChoice(n, p, {"pytorch", "tensorflow", "dali"},
                           {"native_dali", "custom", "none", "synthetic", "daos_pytorch"}, "data loader",
                           &s.data_loader);
      },
      [](const WorkloadSpec& s) { return Quote(s.data_loader); }));
  v.push_back(NotYet("reader.data_loader_classname", "~", Gate::kNone, "custom loader plugin"));
  v.push_back(NotYet("reader.data_loader_sampler", "~", Gate::kNone, "custom loader sampler"));
  v.push_back(NotYet("reader.reader_classname", "~", Gate::kNone, "custom reader plugin"));
  v.push_back(IntKey("reader.batch_size", &WorkloadSpec::batch_size, 1, kMaxSamples, "samples per step per rank"));
  v.push_back(IntKey("reader.batch_size_eval", &WorkloadSpec::batch_size_eval, 1, kMaxSamples, "samples per eval step per rank"));
  v.push_back(IntKey("reader.read_threads", &WorkloadSpec::read_threads, 0, kMaxReadThreads, "loader threads per rank; 0 acts as 1"));
  v.push_back(Label("reader.computation_threads", "1", "TF parse-map parallelism; no I/O"));
  v.push_back(IntKey("reader.prefetch_size", &WorkloadSpec::prefetch_size, 0, 1 << 16, "batches queued ahead per rank"));
  {
    KeyInfo k = ShuffleKey("reader.file_shuffle", &WorkloadSpec::file_shuffle,
                           "off, seed, random: permutes the file list every epoch, whatever the loader (warns where "
                           "DLIO ignores it: every loader but tensorflow on non-TFRecord files)");
    k.status = KeyStatus::kImplementedDiffers;
    k.differs = [](const YAML::Node&, const WorkloadSpec& s) -> std::string {
      // DLIO's iterative sampler (tensorflow loader) shuffles the files of the formats it reads by index.
      if (s.file_shuffle == ShuffleMode::kOff || (s.data_loader == "tensorflow" && !FormatTraitsOf(s.format).streams)) {
        return "";
      }
      return fmt::format("{} permutes the file order every epoch here; DLIO uses file_shuffle only in its iterative "
                         "sampler (tensorflow loader, non-TFRecord files), so with {} on {} files its file order "
                         "never changes",
                         ShuffleModeName(s.file_shuffle), s.data_loader, s.format);
    };
    v.push_back(k);
  }
  {
    KeyInfo k = ShuffleKey("reader.sample_shuffle", &WorkloadSpec::sample_shuffle,
                           "off, seed, random: a real global sample permutation every epoch (index mode; warns: "
                           "DLIO's shuffle changes no I/O)");
    k.status = KeyStatus::kImplementedDiffers;
    k.differs = [](const YAML::Node&, const WorkloadSpec& s) -> std::string {
      if (s.sample_shuffle == ShuffleMode::kOff || FormatTraitsOf(s.format).streams) return "";
      return fmt::format("{} permutes every sample across the fleet every epoch here, so ranks read other samples "
                         "each epoch; DLIO's index sampler shuffles a list that does not change the read order (each "
                         "rank reads the same samples in the same order every epoch)",
                         ShuffleModeName(s.sample_shuffle));
    };
    v.push_back(k);
  }
  AddReaderAccessKeys(v);
}

// Data table: the reader section's rows after the shuffles.
void AddReaderAccessKeys(std::vector<KeyInfo>& v) {
  v.push_back(Label("reader.shuffle_size", "1024",
                    "TF shuffle buffer: reorders records after they are read; no effect on the I/O order"));
  v.push_back(Custom(
      "reader.read_type", KeyStatus::kImplemented,
      "on_demand: whole-file formats (npz, npy, csv, jpeg, png) re-read the file for every sample, as DLIO's index "
      "mode does; memory: a loader thread reads a file once and serves its following samples from memory (it keeps "
      "its most recent file, so memory stays bounded; DLIO keeps every opened file). No effect on hdf5, "
      "indexed_binary, mmap_indexed_binary, tfrecord (streamed once anyway), parquet (a row group is read once per "
      "epoch anyway) and synthetic",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        return ParseChoice(n, p, {"on_demand", "memory"}, {}, "read type", &s.read_type);
      },
      [](const WorkloadSpec& s) { return Quote(s.read_type); }));
  v.push_back(Label("reader.file_access", "multi", "parsed but unused by DLIO"));
  v.push_back(Custom(
      "reader.transfer_size", KeyStatus::kImplemented,
      "TFRecord read size per call; DLIO's default None means TF's 256 KiB",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        if (n.IsNull()) {
          s.transfer_size = 262144;
          return absl::OkStatus();
        }
        int64_t v;
        if (!ParseInt(n, &v) || v < 1 || v > (int64_t{1} << 30)) return MustBe(p, "an integer in [1, 1073741824]", n);
        s.transfer_size = v;
        return absl::OkStatus();
      },
      [](const WorkloadSpec& s) { return fmt::format("{}", s.transfer_size); }));
  v.push_back(BoolKey("reader.odirect", &WorkloadSpec::odirect,
                      "O_DIRECT reads (DLIO: npz/npy only; here npz, npy, csv, jpeg, png and tfrecord): the "
                      "same as dlio_ext.io_engine: odirect"));
  v.push_back(Label("reader.dont_use_mmap", "false", "passed to DALI readers"));
  v.push_back(DistributionKey("reader.preprocess_time", &WorkloadSpec::preprocess_time,
                              "seconds of emulated preprocessing per sample, in the loader thread (DLIO's forms)"));
  v.push_back(StdevKey("reader.preprocess_time_stdev", &WorkloadSpec::preprocess_time,
                       "with a constant preprocess_time: normal(preprocess_time, stdev)"));
  v.push_back(Label("reader.pin_memory", "true", "torch pin_memory"));
  v.push_back(Label("reader.multiprocessing_context", "fork", "torch worker start method"));
  v.push_back(Label("reader.transformed_record_dims", "[]", "shape of the in-memory tensor; no I/O"));
  v.push_back(Label("reader.transformed_record_element_type", "uint8", "dtype of the in-memory tensor; no I/O"));
}

}  // namespace dlio::workload_internal
