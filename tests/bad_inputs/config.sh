# Sourced by tests/test_bad_inputs.sh: config.json malformed, out of range, or contradicting the
# weights or the tokenizer (issue 7). Uses fresh, cfg_set, check, cfg_case, dir_case, P, SRC.

cfg_case shape_mismatch "shape mismatch (config intermediate_size 128)" 'model\.safetensors.*mlp\.(gate|up|down)_proj\.weight' intermediate_size 128

cfg_case vocab_mismatch "shape mismatch (config vocab_size 256)" 'embed_tokens|vocab_size|tokenizer\.model' vocab_size 256

dir_case cfg_malformed "malformed config.json (truncated)" 'config\.json' 'head -c 100 "$SRC/config.json" >"$d/config.json"'

d="$(fresh cfg_notobj)"
echo '[64, 172]' >"$d/config.json"
check "config.json is an array" 'config\.json' -m "$d" "${P[@]}"

dir_case cfg_empty "config.json empty" 'config\.json' ': >"$d/config.json"'

cfg_case cfg_kvheads "num_key_value_heads 3 does not divide 8 heads" 'config\.json.*num_key_value_heads' num_key_value_heads 3

cfg_case cfg_hidden0 "hidden_size 0" 'config\.json.*hidden_size' hidden_size 0

cfg_case cfg_hidden_neg "hidden_size -64" 'config\.json.*hidden_size' hidden_size -64

cfg_case cfg_hidden_str "hidden_size a string" 'config\.json.*hidden_size' hidden_size '"64"'

cfg_case cfg_hidden_frac "hidden_size 64.5" 'config\.json.*hidden_size' hidden_size 64.5

cfg_case cfg_heads0 "num_attention_heads 0" 'config\.json.*num_attention_heads' num_attention_heads 0

d="$(fresh cfg_layers_missing)"
python3 -c 'import json,sys
p=sys.argv[1]; c=json.load(open(p)); del c["num_hidden_layers"]; json.dump(c,open(p,"w"))' "$d/config.json"
check "config.json without num_hidden_layers" 'config\.json.*num_hidden_layers' -m "$d" "${P[@]}"

cfg_case cfg_eps "rms_norm_eps -1" 'config\.json.*rms_norm_eps' rms_norm_eps -1

cfg_case cfg_ctx0 "max_position_embeddings 0" 'config\.json.*max_position_embeddings' max_position_embeddings 0

cfg_case cfg_bos "bos_token_id outside the vocabulary" 'config\.json.*bos_token_id' bos_token_id 100000

dir_case cfg_missing "missing config.json" 'config\.json' 'rm "$d/config.json"'

d="$(fresh cfg_dir)"
rm "$d/config.json"
mkdir "$d/config.json"
check "config.json is a directory" 'config\.json' -m "$d" "${P[@]}"

cfg_case cfg_layers6 "num_hidden_layers 6 (weights have 5)" 'model\.layers\.5\.' num_hidden_layers 6

cfg_case cfg_kv8 "num_key_value_heads 8 (weights have 4)" 'self_attn\.k_proj\.weight.*config says' num_key_value_heads 8

cfg_case cfg_hd "head_dim 16 (weights have 8)" 'self_attn\.q_proj\.weight.*config says' head_dim 16

cfg_case cfg_hidden128 "hidden_size 128 (weights have 64)" 'model\.embed_tokens\.weight.*config says' hidden_size 128

cfg_case cfg_vocab1024 "vocab_size 1024 (weights have 512)" 'model\.embed_tokens\.weight.*config says' vocab_size 1024

if [ -f "$SHARED/models/llama2-tokenizer/tokenizer.model" ]; then
    d="$(fresh tok_bigger)"
    cp "$SHARED/models/llama2-tokenizer/tokenizer.model" "$d/tokenizer.model"
    check "tokenizer with 32000 pieces for vocab_size 512" 'tokenizer\.model.*vocab_size' -m "$d" "${P[@]}"
fi

cfg_case cfg_eos "eos_token_id empty list" 'config\.json.*eos_token_id' eos_token_id '[]'

cfg_case cfg_eps_huge "rms_norm_eps 1e300 (overflows float)" 'config\.json.*rms_norm_eps' rms_norm_eps 1e300

cfg_case cfg_theta_str "rope_theta a string" 'config\.json.*rope_theta' rope_theta '"10000"'

cfg_case cfg_rope_dyn "rope_scaling dynamic (unsupported)" 'config\.json.*rope_scaling.*dynamic' rope_scaling '{"type": "dynamic", "factor": 2}'

cfg_case cfg_rope_factor "rope_scaling factor 0.5" 'config\.json.*rope_scaling\.factor' rope_scaling '{"type": "linear", "factor": 0.5}'

cfg_case cfg_heads_big "num_attention_heads beyond int" 'config\.json.*num_attention_heads' num_attention_heads 3000000000

d="$(fresh cfg_key_newline)"
printf '{"hidden_size": 64, "intermediate_size": 172, "num_hidden_layers": 5, "num_attention_heads": 8,\n "vocab_size": 512, "num_key_value_heads": "4\\n4"}' >"$d/config.json"
check "config value with an escaped newline (one line)" 'config\.json.*num_key_value_heads' -m "$d" "${P[@]}"

d="$(fresh cfg_trailing)"
printf '{"hidden_size": 64} {"x": 1}' >"$d/config.json"
check "config.json with trailing data" 'config\.json.*malformed' -m "$d" "${P[@]}"

dir_case empty_dir "empty model folder" 'config\.json' 'rm -f "$d"/*'
