/* Fuzz target: the safetensors header parser (st_parse, used by st_open on the mmap).
 * The input is a whole .safetensors file. On success every tensor must lie inside the input's
 * data buffer with nbytes = product(shape) * dtype size (its first and last bytes are read, so
 * AddressSanitizer catches a pointer outside the input), names must be unique and st_find must
 * find each one. */
#include "fuzz/fuzz.h"
#include "model/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    st_file f;
    char err[LLM_ERR_LEN] = "";
    if (st_parse(data, size, "fuzz.safetensors", &f, err, sizeof err) != 0) {
        fuzz_check_err(err);
        if (f.tensors || f.n_tensors) fuzz_fail("failed parse left tensors behind", err);
        return 0;
    }
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | data[i];
    const uint8_t *buf0 = data + 8 + hlen, *buf1 = data + size;
    volatile uint8_t sink = 0;
    for (int i = 0; i < f.n_tensors; i++) {
        const st_tensor *t = &f.tensors[i];
        if (st_find(&f, t->name) != t) fuzz_fail("st_find does not find", t->name);
        if (t->ndim < 0 || t->ndim > 4) fuzz_fail("ndim out of range", t->name);
        uint64_t elems = 1;
        for (int d = 0; d < t->ndim; d++) elems *= (uint64_t)t->shape[d];
        if (elems * dtype_size(t->dtype) != t->nbytes) fuzz_fail("nbytes != shape * dtype", t->name);
        const uint8_t *p = t->data;
        if (p < buf0 || p + t->nbytes > buf1) fuzz_fail("tensor outside the data buffer", t->name);
        if (t->nbytes) sink ^= p[0] ^ p[t->nbytes - 1];
    }
    (void)sink;
    st_close(&f);
    return 0;
}
