# gpurelay for a site: spack repo add <checkout>/spack (docs/OPERATIONS.md, site administrators).
import os

from spack.package import *

# This repository's checkout: version main is its branch; a version's tarball is its git archive.
CHECKOUT = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


class Gpurelay(CMakePackage, CudaPackage):
    """A producer GPU streams tensors to a consumer GPU, which runs a kernel on each as it
    arrives while an independent kernel overlaps the transfer: does the overlap pay? Every run
    checks every element and writes its timings to HDF5 and JSON."""

    git = "file://" + CHECKOUT
    url = f"file://{CHECKOUT}/outputs/gpurelay-0.1.0.tar.gz"

    version("main", branch="main")
    # From the tarball in outputs/, which changes with every commit: no checksum to keep, so
    # spack install --no-checksum gpurelay@0.1.0.
    version("0.1.0")

    # cuda_arch=90: H100 and H200. NCCL comes with the CUDA path, which needs it.
    conflicts("cuda_arch=none", when="+cuda", msg="name the GPUs' architecture: cuda_arch=90")
    depends_on("nccl", when="+cuda")

    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("cmake@3.24:", type="build")
    depends_on("mpi")
    depends_on("hdf5@1.10:+mpi")
    depends_on("cli11@2:")
    depends_on("tomlplusplus@3:")
    depends_on("nlohmann-json@3:")
    depends_on("fmt@9:")
    depends_on("benchmark")  # the bench_* programs
    depends_on("googletest", type="test")
    # The end-to-end tests read the result files back with h5py.
    depends_on("python@3:", type="test")
    depends_on("py-h5py", type="test")
    depends_on("py-numpy", type="test")

    def cmake_args(self):
        spec = self.spec
        args = [
            self.define_from_variant("GPURELAY_CUDA", "cuda"),
            self.define("GPURELAY_TESTS", self.run_tests),
            # Tests that start a Slurm cluster or Nsight Systems are the checkout's, not a build's.
            self.define("GPURELAY_SLURM_TESTS", "OFF"),
            self.define("GPURELAY_NSYS_TESTS", "OFF"),
        ]
        if spec.satisfies("+cuda"):
            args += [
                self.define("CMAKE_CUDA_COMPILER", spec["cuda"].prefix.bin.nvcc),
                self.define("CMAKE_CUDA_ARCHITECTURES", ";".join(spec.variants["cuda_arch"].value)),
                self.define("NCCL_ROOT", spec["nccl"].prefix),
            ]
        if self.run_tests:
            args.append(self.define("GPURELAY_PYTHON", spec["python"].command.path))
        return args

    def check(self):
        """spack install --test=root: the quick tier (unit tests, one run per transport)."""
        with working_dir(self.build_directory):
            Executable(self.spec["cmake"].prefix.bin.ctest)("-L", "quick", "--output-on-failure")
