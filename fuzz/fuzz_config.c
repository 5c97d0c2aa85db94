/* Fuzz target: the config.json reader (config_parse, used by config_load). The input is the
 * file's text (not NUL-terminated: a read past the end is an AddressSanitizer error). On
 * success the config must satisfy what config.h promises and the loader relies on. */
#include "fuzz/fuzz.h"
#include "model/model.h"

#include <math.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    model_config c;
    memset(&c, 0xA5, sizeof c);
    char err[LLM_ERR_LEN] = "";
    if (config_parse((const char *)data, size, "fuzz/config.json", &c, err, sizeof err) != 0) {
        fuzz_check_err(err);
        return 0;
    }
    if (c.hidden_size <= 0 || c.intermediate_size <= 0 || c.n_layers <= 0 || c.n_heads <= 0 ||
        c.n_kv_heads <= 0 || c.vocab_size <= 0 || c.max_position_embeddings <= 0)
        fuzz_fail("accepted a non-positive size", "");
    if (c.head_dim <= 0 || c.head_dim % 2) fuzz_fail("accepted a bad head_dim", "");
    if (c.n_heads % c.n_kv_heads) fuzz_fail("n_kv_heads does not divide n_heads", "");
    if (!(c.rms_norm_eps > 0) || !isfinite(c.rms_norm_eps)) fuzz_fail("bad rms_norm_eps", "");
    if (!(c.rope_theta > 0) || !isfinite(c.rope_theta)) fuzz_fail("bad rope_theta", "");
    if (!(c.rope_scaling_factor >= 1) || !isfinite(c.rope_scaling_factor))
        fuzz_fail("bad rope_scaling_factor", "");
    if (c.bos_token_id < 0 || c.bos_token_id >= c.vocab_size) fuzz_fail("bos outside vocab", "");
    if (c.eos_token_id < 0 || c.eos_token_id >= c.vocab_size) fuzz_fail("eos outside vocab", "");
    if (c.tie_word_embeddings != 0 && c.tie_word_embeddings != 1) fuzz_fail("tie not 0/1", "");
    return 0;
}
