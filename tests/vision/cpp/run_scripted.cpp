// Runs a scripted model on the bytes of a file, as a deployed service would:
//
//   run_scripted OPS_LIBRARY MODEL.pt INPUT_FILE OUTPUT [REPEATS]
//
// loads the operator library (libtrivium_ops.so: the trivium:: ops), loads the
// TorchScript model, calls forward(bytes) on one thread and writes the output tensor
// to OUTPUT as "dtype shape..." on the first line followed by its raw contiguous bytes.
// With REPEATS, it also prints the mean seconds per call over that many calls
// (in inference mode, after a few warm-up calls).
#include <dlfcn.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include <ATen/Parallel.h>
#include <torch/script.h>

int main(int argc, char** argv) {
    if (argc < 5) {
        std::cerr << "usage: run_scripted OPS_LIBRARY MODEL.pt INPUT_FILE OUTPUT [REPEATS]\n";
        return 2;
    }
    if (!dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL)) {
        std::cerr << "cannot load " << argv[1] << ": " << dlerror() << "\n";
        return 1;
    }
    at::set_num_threads(1);
    torch::jit::Module model = torch::jit::load(argv[2]);
    model.eval();
    std::ifstream file(argv[3], std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    at::Tensor data = at::empty({int64_t(bytes.size())}, at::kByte);
    std::memcpy(data.data_ptr(), bytes.data(), bytes.size());

    torch::NoGradGuard no_grad;
    at::Tensor result;
    try {
        result = model.forward({data}).toTensor().contiguous();
    } catch (const c10::Error& e) {
        std::cerr << "error: " << e.what_without_backtrace() << "\n";
        return 3;
    } catch (const std::exception& e) {  // the TorchScript interpreter rethrows with its context
        std::cerr << "error: " << e.what() << "\n";
        return 3;
    }
    if (argc > 5) {
        const int repeats = std::stoi(argv[5]);
        c10::InferenceMode inference;
        for (int i = 0; i < 5; ++i) model.forward({data});  // the graph executor's warm-up
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < repeats; ++i) model.forward({data});
        const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
        std::cout << "seconds_per_call " << took.count() / repeats << "\n";
    }
    std::ofstream out(argv[4], std::ios::binary);
    out << c10::toString(result.scalar_type());
    for (int64_t size : result.sizes()) out << " " << size;
    out << "\n";
    out.write(static_cast<const char*>(result.data_ptr()), std::streamsize(result.nbytes()));
    return 0;
}
