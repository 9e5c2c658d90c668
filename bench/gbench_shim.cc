// The Google Benchmark shim: C cases in, C callbacks out.
#include "gbench_shim.h"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

struct qkb_gb_state {
    benchmark::State *s;
};

namespace {

std::string user_out;
bool list_only = false;

// Forwards every run to the C callback; prints nothing.
class CReporter : public benchmark::BenchmarkReporter {
  public:
    CReporter(qkb_gb_report_fn fn, void *ctx) : fn_(fn), ctx_(ctx) {}
    bool ReportContext(const Context &) override { return true; }
    void ReportRuns(const std::vector<Run> &runs) override {
        for (const Run &r : runs) {
            std::string name = r.run_name.function_name;
            std::string agg = r.run_type == Run::RT_Aggregate ? r.aggregate_name : std::string();
            double it = r.iterations > 0 ? (double)r.iterations : 1.0;
            qkb_gb_run c;
            c.name = name.c_str();
            c.aggregate = agg.c_str();
            c.repetition_index = r.repetition_index;
            c.repetitions = r.repetitions;
            c.iterations = r.iterations;
            c.real_s = r.real_accumulated_time / it;
            c.cpu_s = r.cpu_accumulated_time / it;
            c.error = r.error_occurred;
            c.error_message = r.error_message.c_str();
            if (r.run_type == Run::RT_Aggregate && r.aggregate_unit != benchmark::kTime) {
                c.real_s = r.real_accumulated_time; // cv: a ratio, not a time
                c.cpu_s = r.cpu_accumulated_time;
            }
            if (fn_) fn_(&c, ctx_);
        }
    }

  private:
    qkb_gb_report_fn fn_;
    void *ctx_;
};

} // namespace

extern "C" {

int qkb_gb_is_flag(const char *a) { return !std::strncmp(a, "--benchmark_", 12) || !std::strncmp(a, "--v=", 4); }

int qkb_gb_init(int nflags, char **flags) {
    static std::vector<std::string> store;
    static std::vector<char *> argv;
    store.assign(1, "qkbench");
    for (int i = 0; i < nflags; i++) {
        if (!qkb_gb_is_flag(flags[i])) {
            std::fprintf(stderr, "qkbench: '%s' is not a Google Benchmark flag\n", flags[i]);
            return 2;
        }
        if (!std::strncmp(flags[i], "--benchmark_out=", 16)) user_out = flags[i] + 16;
        if (!std::strcmp(flags[i], "--benchmark_list_tests") || !std::strcmp(flags[i], "--benchmark_list_tests=true"))
            list_only = true;
        store.push_back(flags[i]);
    }
    argv.clear();
    for (auto &s : store) argv.push_back(&s[0]);
    argv.push_back(nullptr);
    int argc = (int)store.size();
    benchmark::Initialize(&argc, argv.data());
    for (int i = 1; i < argc; i++) {
        std::fprintf(stderr,
                     "qkbench: unknown or malformed Google Benchmark flag '%s' (they take the form "
                     "--benchmark_NAME=VALUE, e.g. --benchmark_repetitions=5)\n",
                     argv[i]);
        return 2;
    }
    return 0;
}

void qkb_gb_register(const char *name, qkb_gb_fn fn, void *arg) {
    benchmark::RegisterBenchmark(name, [fn, arg](benchmark::State &s) {
        qkb_gb_state st{&s};
        fn(&st, arg);
    })->UseRealTime();
}

void qkb_gb_context(const char *key, const char *value) { benchmark::AddCustomContext(key, value); }

int qkb_gb_keep_running(qkb_gb_state *st) { return st->s->KeepRunning(); }
void qkb_gb_pause(qkb_gb_state *st) { st->s->PauseTiming(); }
void qkb_gb_resume(qkb_gb_state *st) { st->s->ResumeTiming(); }

void qkb_gb_counter(qkb_gb_state *st, const char *name, double value, int flags) {
    benchmark::Counter::Flags f = benchmark::Counter::kDefaults;
    if (flags == QKB_GB_RATE) f = benchmark::Counter::kIsRate;
    if (flags == QKB_GB_ITER_RATE) f = benchmark::Counter::kIsIterationInvariantRate;
    if (flags == QKB_GB_AVG_ITER) f = benchmark::Counter::kAvgIterations;
    st->s->counters[name] = benchmark::Counter(value, f);
}

void qkb_gb_label(qkb_gb_state *st, const char *label) { st->s->SetLabel(label); }
void qkb_gb_skip(qkb_gb_state *st, const char *why) { st->s->SkipWithError(why); }
int64_t qkb_gb_iterations(const qkb_gb_state *st) { return (int64_t)st->s->iterations(); }

size_t qkb_gb_run_all(const char *json_path, qkb_gb_report_fn report, void *ctx) {
    CReporter display(report, ctx);
    if (!user_out.empty() || !json_path || list_only) return benchmark::RunSpecifiedBenchmarks(&display);
    // Our own file reporter: Google Benchmark's JSON, to the path we choose.
    std::ofstream out(json_path);
    if (!out) {
        std::fprintf(stderr, "qkbench: cannot write %s\n", json_path);
        return benchmark::RunSpecifiedBenchmarks(&display);
    }
    benchmark::JSONReporter json;
    json.SetOutputStream(&out);
    json.SetErrorStream(&std::cerr);
    // RunSpecifiedBenchmarks(display, file) insists on --benchmark_out; drive both reporters ourselves.
    class Tee : public benchmark::BenchmarkReporter {
      public:
        Tee(benchmark::BenchmarkReporter *a, benchmark::BenchmarkReporter *b) : a_(a), b_(b) {}
        bool ReportContext(const Context &c) override { return a_->ReportContext(c) && b_->ReportContext(c); }
        void ReportRuns(const std::vector<Run> &r) override {
            b_->ReportRuns(r);
            a_->ReportRuns(r);
        }
        void Finalize() override {
            a_->Finalize();
            b_->Finalize();
        }

      private:
        benchmark::BenchmarkReporter *a_, *b_;
    } tee(&display, &json);
    size_t n = benchmark::RunSpecifiedBenchmarks(&tee);
    out.flush();
    return n;
}

int qkb_gb_user_out(const char **path) {
    if (path) *path = user_out.c_str();
    return !user_out.empty();
}

int qkb_gb_list_only(void) { return list_only; }

void qkb_gb_shutdown(void) { benchmark::Shutdown(); }
}
