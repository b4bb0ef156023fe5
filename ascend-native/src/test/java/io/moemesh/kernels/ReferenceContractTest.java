package io.moemesh.kernels;

/**
 * The contract run on the reference itself: agreement with the reference is trivial here, but determinism,
 * row independence, views and the rejection of bad input are not.
 */
class ReferenceContractTest extends KernelsContract {
  @Override
  Kernels kernels() {
    return new ReferenceKernels();
  }
}
