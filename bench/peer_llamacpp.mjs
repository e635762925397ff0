// bench/peer_llamacpp.mjs - llama.cpp on the same model files and the same machine as `ingot bench
// generate`, for the side-by-side figures of docs/PERFORMANCE.md (issue 15). llama.cpp is not in
// Debian 12; node-llama-cpp's npm packages ship its prebuilt CPU libraries (libllama, libggml-base
// and one libggml-cpu per x86 level, the best of which ggml picks at run time), so this needs
// node and that package, neither of which the build or the tests use:
//
//   mkdir /tmp/nlcjs && cd /tmp/nlcjs && npm init -y && \
//       npm install --ignore-scripts node-llama-cpp@3.22.1
//   ./build/bench/bench_lm /tmp/llama-Q8_0.gguf Q8_0 \
//       --vocab-from ../shared/fixtures/tokenizers/llama.cpp/ggml-vocab-llama-spm.gguf
//   NLC=/tmp/nlcjs/node_modules/node-llama-cpp node bench/peer_llamacpp.mjs \
//       /tmp/llama-Q8_0.gguf --threads 1 --prompt-tokens 128 --decode-tokens 32 --reps 5
//
// What it times matches `ingot bench generate`: a prefill of P tokens into an empty context (one
// batch), then D greedy decode steps, REPS times; wall-clock best and median tokens/s and the
// median per CPU second of the process (process.cpuUsage). One JSON object on stdout.
import path from "node:path";
import { pathToFileURL } from "node:url";

const args = process.argv.slice(2);
if (args.length < 1 || !process.env.NLC) {
    console.error("usage: NLC=.../node_modules/node-llama-cpp node peer_llamacpp.mjs MODEL.gguf " +
                  "[--threads T] [--prompt-tokens P] [--decode-tokens D] [--reps R]");
    process.exit(2);
}
const model = args[0];
const opt = { threads: 1, "prompt-tokens": 128, "decode-tokens": 32, reps: 5 };
for (let i = 1; i + 1 < args.length; i += 2) opt[args[i].replace(/^--/, "")] = Number(args[i + 1]);
const nlc = await import(pathToFileURL(path.join(process.env.NLC, "dist", "index.js")).href);

const llama = await nlc.getLlama({ gpu: false, build: "never", maxThreads: 0, logLevel: "error" });
const m = await llama.loadModel({ modelPath: model, gpuLayers: 0 });
const P = opt["prompt-tokens"], D = opt["decode-tokens"];
const ctx = await m.createContext({ contextSize: 512, batchSize: 512, threads: opt.threads,
                                    sequences: 1 });
const seq = ctx.getSequence();

let s = 0x9e3779b9; // seeded prompt ids in [3, vocab)
const nv = 32000; // the vocabulary bench_lm copies (--vocab-from)
const prompt = [];
for (let i = 0; i < P; i++) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    prompt.push(3 + (s % (nv - 3)));
}

const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };
const pre = [], dec = [], preCpu = [], decCpu = [];
for (let r = 0; r < opt.reps + 1; r++) { // the first repetition warms up and is not counted
    await seq.clearHistory();
    let t0 = performance.now(), c0 = cpu();
    await seq.evaluateWithoutGeneratingNewTokens(prompt);
    let t1 = performance.now(), c1 = cpu();
    let n = 0;
    for await (const tok of seq.evaluate([prompt[P - 1]], { temperature: 0 })) {
        void tok;
        if (++n >= D) break;
    }
    let t2 = performance.now(), c2 = cpu();
    if (r === 0) continue;
    pre.push(P / ((t1 - t0) / 1e3));
    dec.push(D / ((t2 - t1) / 1e3));
    preCpu.push(P / (c1 - c0));
    decCpu.push(D / (c2 - c1));
}
const med = (a) => { const b = [...a].sort((x, y) => x - y); return b[b.length >> 1]; };
const r1 = (x) => Math.round(x * 10) / 10;
console.log(JSON.stringify({
    peer: "llama.cpp (node-llama-cpp " + (nlc.version ?? "3.22.1") + " prebuilt)",
    model: path.basename(model), threads: opt.threads, prompt_tokens: P, decode_tokens: D,
    reps: opt.reps, prefill_best: r1(Math.max(...pre)), prefill_median: r1(med(pre)),
    prefill_per_cpu_s: r1(med(preCpu)), decode_best: r1(Math.max(...dec)),
    decode_median: r1(med(dec)), decode_per_cpu_s: r1(med(decCpu)),
}));
await ctx.dispose();
await m.dispose();
await llama.dispose();
