# Sourced by tests/test_bad_inputs.sh: model.safetensors truncated, corrupt or contradicting
# itself, and sharded indexes (issue 7). Uses fresh, st_edit, check, st_case, dir_case, P, ST_SIZE
# and HLEN from there.

for cut in 0 4 7 8 100 $((8 + HLEN - 1)) $((8 + HLEN)) $((8 + HLEN + 1)) 500000 $((ST_SIZE - 4)) $((ST_SIZE - 1)); do
    d="$(fresh "trunc$cut")"
    st_edit "$d/model.safetensors" truncate "$cut"
    check "truncated model.safetensors at $cut of $ST_SIZE bytes" 'model\.safetensors' -m "$d" "${P[@]}"
done

st_case garbage "garbage model.safetensors ($ST_SIZE random bytes)" 'model\.safetensors' garbage "$ST_SIZE" 1

d="$(fresh garbage_small_hlen)"
# a plausible header length followed by random bytes: the JSON parser sees garbage
python3 -c 'import struct,random,sys
r=random.Random(2); open(sys.argv[1],"wb").write(struct.pack("<Q",64)+bytes(r.getrandbits(8) for _ in range(4096)))' "$d/model.safetensors"
check "garbage header JSON (64 random bytes)" 'model\.safetensors' -m "$d" "${P[@]}"

st_case hlen_eof "header length past EOF" 'model\.safetensors.*header length' hlen "$ST_SIZE"

st_case hlen_huge "header length 2^64-1" 'model\.safetensors.*header length' hlen 18446744073709551615

st_case hlen_zero "header length 0" 'model\.safetensors' hlen 0

st_case badjson "header JSON malformed (no closing brace)" 'model\.safetensors.*(JSON|json)' break_json

st_case notobject "header JSON is an array" 'model\.safetensors' raw_header '[1, 2, 3]'

st_case emptyobj "header JSON has no tensors" 'model\.safetensors.*model\.' raw_header '{}'

st_case offsets_out "offsets outside the data buffer" 'model\.safetensors.*model\.norm\.weight' set_offsets model.norm.weight 1040128 9999999

st_case offsets_rev "offsets begin > end" 'model\.safetensors.*model\.norm\.weight' set_offsets model.norm.weight 1040128 1039872

st_case offsets_neg "negative offsets" 'model\.safetensors.*model\.norm\.weight' set_offsets model.norm.weight -256 0

st_case offsets_span "offsets span != shape" 'model\.safetensors.*model\.norm\.weight' set_offsets model.norm.weight 1040000 1040128

st_case overlap "offsets overlap another tensor" 'model\.safetensors.*(model\.norm\.weight|v_proj)' set_offsets model.norm.weight 1039616 1039872

st_case dtype_i8 "unknown dtype I8" 'model\.safetensors.*q_proj.*I8' set_dtype model.layers.0.self_attn.q_proj.weight I8

st_case dtype_f64 "unsupported dtype F64" 'model\.safetensors.*model\.norm\.weight.*F64' set_dtype model.norm.weight F64

st_case missing_tensor "missing tensor" 'model\.safetensors.*model\.layers\.2\.mlp\.up_proj\.weight' remove model.layers.2.mlp.up_proj.weight

st_case missing_norm "missing final norm" 'model\.norm\.weight' remove model.norm.weight

st_case missing_embed "missing embeddings" 'model\.embed_tokens\.weight' remove model.embed_tokens.weight

st_case shape_header "tensor shape transposed" 'model\.layers\.1\.self_attn\.k_proj\.weight' set_shape model.layers.1.self_attn.k_proj.weight 64,32

d="$(fresh sharded_missing)"
st_edit "$d/model.safetensors" split model.layers.2.mlp.up_proj.weight model-00002-of-00002.safetensors
rm "$d/model-00002-of-00002.safetensors"
check "sharded index naming a missing shard" 'model\.safetensors\.index\.json.*model-00002-of-00002\.safetensors' -m "$d" "${P[@]}"

d="$(fresh sharded_badindex)"
st_edit "$d/model.safetensors" split model.layers.2.mlp.up_proj.weight model-00002-of-00002.safetensors
printf '{"weight_map": {' >"$d/model.safetensors.index.json"
check "sharded index malformed JSON" 'model\.safetensors\.index\.json' -m "$d" "${P[@]}"

d="$(fresh sharded_unlisted)"
st_edit "$d/model.safetensors" split model.layers.2.mlp.up_proj.weight model-00002-of-00002.safetensors
python3 -c 'import json,sys
p=sys.argv[1]; j=json.load(open(p)); del j["weight_map"]["model.layers.2.mlp.up_proj.weight"]; json.dump(j,open(p,"w"))' \
    "$d/model.safetensors.index.json"
check "sharded index missing a tensor" 'model\.layers\.2\.mlp\.up_proj\.weight' -m "$d" "${P[@]}"

dir_case no_weights "no model.safetensors" 'model\.safetensors' 'rm "$d/model.safetensors"'

d="$(fresh st_is_dir)"
rm "$d/model.safetensors"
mkdir "$d/model.safetensors"
check "model.safetensors is a directory" 'model\.safetensors' -m "$d" "${P[@]}"

# raw_header_py FILE PYEXPR: rewrites the header JSON text with a Python expression of h (the
# header text, str) — for headers json.dumps cannot write (duplicate keys, control characters).
raw_header_py() {
    python3 -c 'import struct,sys
p,expr=sys.argv[1:3]; b=open(p,"rb").read(); n=struct.unpack("<Q",b[:8])[0]
h=b[8:8+n].decode(); t=eval(expr).encode(); open(p,"wb").write(struct.pack("<Q",len(t))+t+b[8+n:])' "$@"
}

d="$(fresh name_newline)"
raw_header_py "$d/model.safetensors" 'h.replace("\"model.norm.weight\":{\"dtype\":\"F32\"", "\"model.norm\\nweight\":{\"dtype\":\"I8\"")'
check "tensor name with a newline in the error (one line)" 'model\.norm\?weight.*I8' -m "$d" "${P[@]}"

d="$(fresh dup_tensor)"
raw_header_py "$d/model.safetensors" 'h.rstrip()[:-1] + ",\"model.norm.weight\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}}"'
check "duplicate tensor name in the header" 'model\.safetensors.*(duplicate|model\.norm\.weight)' -m "$d" "${P[@]}"

st_case ndim5 "tensor with 5 dimensions" 'model\.safetensors.*model\.norm\.weight.*dimensions' set_shape model.norm.weight 1,1,1,1,64

st_case shape_neg "negative shape" 'model\.safetensors.*model\.norm\.weight.*shape' set_shape model.norm.weight -64

st_case shape_huge "shape whose product overflows" 'model\.safetensors.*model\.norm\.weight.*too large' set_shape model.norm.weight 4294967296,4294967296,4294967296

st_case dtype_f16_span "dtype F16 on F32 bytes (span mismatch)" 'model\.safetensors.*model\.norm\.weight.*F16' set_dtype model.norm.weight F16

d="$(fresh dtype_num)"
raw_header_py "$d/model.safetensors" 'h.replace("\"dtype\":\"F32\"", "\"dtype\":32", 1)'
check "dtype not a string" 'model\.safetensors.*dtype' -m "$d" "${P[@]}"

d="$(fresh offsets3)"
raw_header_py "$d/model.safetensors" 'h.replace("\"data_offsets\":[0,131072]", "\"data_offsets\":[0,131072,5]", 1)'
check "data_offsets with 3 numbers" 'model\.safetensors.*model\.embed_tokens\.weight.*data_offsets' -m "$d" "${P[@]}"

d="$(fresh offsets_frac)"
raw_header_py "$d/model.safetensors" 'h.replace("\"data_offsets\":[0,131072]", "\"data_offsets\":[0.5,131072]", 1)'
check "fractional data_offsets" 'model\.safetensors.*model\.embed_tokens\.weight.*data_offsets' -m "$d" "${P[@]}"

d="$(fresh header_nul)"
raw_header_py "$d/model.safetensors" 'h[:10] + "\0" + h[11:]'
check "NUL byte inside the header JSON" 'model\.safetensors' -m "$d" "${P[@]}"

d="$(fresh zero_bytes)"
python3 -c 'import sys; open(sys.argv[1],"wb").write(bytes(1045016))' "$d/model.safetensors"
check "model.safetensors all zero bytes" 'model\.safetensors' -m "$d" "${P[@]}"

# sharded checkpoints
d="$(fresh shard_trunc)"
st_edit "$d/model.safetensors" split model.layers.2.mlp.up_proj.weight model-00002-of-00002.safetensors
st_edit "$d/model-00002-of-00002.safetensors" truncate 200
check "truncated shard" 'model-00002-of-00002\.safetensors' -m "$d" "${P[@]}"

d="$(fresh shard_escape)"
st_edit "$d/model.safetensors" split model.layers.2.mlp.up_proj.weight model-00002-of-00002.safetensors
python3 -c 'import json,sys
p=sys.argv[1]; j=json.load(open(p)); j["weight_map"]["model.layers.2.mlp.up_proj.weight"]="../../etc/passwd"; json.dump(j,open(p,"w"))' \
    "$d/model.safetensors.index.json"
check "index naming a shard outside the model folder" 'index\.json.*outside the model folder' -m "$d" "${P[@]}"

d="$(fresh shard_num)"
st_edit "$d/model.safetensors" split model.layers.2.mlp.up_proj.weight model-00002-of-00002.safetensors
python3 -c 'import json,sys
p=sys.argv[1]; j=json.load(open(p)); j["weight_map"]["model.norm.weight"]=7; json.dump(j,open(p,"w"))' \
    "$d/model.safetensors.index.json"
check "index weight_map value not a file name" 'index\.json.*model\.norm\.weight.*not a file name' -m "$d" "${P[@]}"

d="$(fresh index_nomap)"
st_edit "$d/model.safetensors" split model.layers.2.mlp.up_proj.weight model-00002-of-00002.safetensors
echo '{"metadata": {}, "weight_map": ["model-rest.safetensors"]}' >"$d/model.safetensors.index.json"
check "index weight_map not an object" 'index\.json.*weight_map' -m "$d" "${P[@]}"

d="$(fresh index_empty)"
st_edit "$d/model.safetensors" split model.layers.2.mlp.up_proj.weight model-00002-of-00002.safetensors
: >"$d/model.safetensors.index.json"
check "index empty file" 'index\.json' -m "$d" "${P[@]}"

d="$(fresh shard_wrong)"
st_edit "$d/model.safetensors" split model.layers.2.mlp.up_proj.weight model-00002-of-00002.safetensors
python3 -c 'import json,sys
p=sys.argv[1]; j=json.load(open(p)); j["weight_map"]["model.layers.2.mlp.up_proj.weight"]="model-rest.safetensors"; json.dump(j,open(p,"w"))' \
    "$d/model.safetensors.index.json"
check "index pointing a tensor at the wrong shard" 'model-rest\.safetensors.*model\.layers\.2\.mlp\.up_proj\.weight' -m "$d" "${P[@]}"
