import { DockerfileParser, type Copy, type Env, type JSONInstruction } from 'dockerfile-ast';

export type ImageStep =
  | { readonly kind: 'copy'; readonly sources: readonly string[]; readonly destination: string; readonly from?: string }
  | { readonly kind: 'run'; readonly command: string };

export interface ImageStage {
  readonly name?: string;
  /** The image FROM names, as written (build args unexpanded). */
  readonly base: string;
  /** The last WORKDIR (the directory COPY and RUN work in). */
  readonly workdir: string;
  readonly env: Record<string, string>;
  readonly user?: string;
  readonly steps: readonly ImageStep[];
}

/** What a Dockerfile says to do, in the order it says it: the parts the image rehearsal acts on. */
export interface ImageRecipe {
  readonly stages: readonly ImageStage[];
  readonly entrypoint: readonly string[];
  readonly cmd: readonly string[];
  readonly expose: readonly number[];
  readonly volumes: readonly string[];
  /** ARGs declared before the first FROM (the ones FROM lines may use), with their defaults. */
  readonly globalArgs: Record<string, string>;
}

const jsonArray = (instruction: JSONInstruction): string[] => instruction.getJSONStrings().map((s) => s.getJSONValue());

/** Parses with dockerfile-ast (the parser behind VS Code's Dockerfile support); shell-form ENTRYPOINT/CMD are refused. */
export function readImageRecipe(text: string): ImageRecipe {
  const dockerfile = DockerfileParser.parse(text);
  const stages: Array<{ name?: string; base: string; workdir: string; env: Record<string, string>; user?: string; steps: ImageStep[] }> = [];
  let entrypoint: string[] = [];
  let cmd: string[] = [];
  const expose: number[] = [];
  const volumes: string[] = [];
  const globalArgs: Record<string, string> = {};

  for (const instruction of dockerfile.getInstructions()) {
    const keyword = instruction.getKeyword();
    const args = instruction.getArguments().map((a) => a.getValue());
    const stage = stages.at(-1);
    if (keyword === 'FROM') {
      const name = /\bAS\s+(\S+)\s*$/i.exec(instruction.getArgumentsContent() ?? '')?.[1];
      stages.push({ ...(name ? { name } : {}), base: args[0] ?? '', workdir: '/', env: {}, steps: [] });
      continue;
    }
    if (keyword === 'ARG' && !stage) {
      const [name, value = ''] = (args[0] ?? '').split(/=(.*)/s);
      globalArgs[name!] = value;
      continue;
    }
    if (!stage) throw new Error(`${keyword} before FROM`);
    switch (keyword) {
      case 'WORKDIR':
        stage.workdir = args[0]!;
        break;
      case 'ENV':
        for (const p of (instruction as Env).getProperties()) stage.env[p.getName()] = p.getValue() ?? '';
        break;
      case 'USER':
        stage.user = args[0]!;
        break;
      case 'COPY': {
        const from = (instruction as Copy).getFromFlag()?.getValue() ?? undefined;
        const paths = args.filter((a) => !a.startsWith('--'));
        stage.steps.push({ kind: 'copy', sources: paths.slice(0, -1), destination: paths.at(-1)!, ...(from ? { from } : {}) });
        break;
      }
      case 'RUN':
        stage.steps.push({ kind: 'run', command: instruction.getArgumentsContent() ?? '' });
        break;
      case 'ENTRYPOINT':
      case 'CMD': {
        const json = jsonArray(instruction as JSONInstruction);
        if (json.length === 0) throw new Error(`${keyword} must be in exec (JSON) form`);
        if (keyword === 'CMD') cmd = json;
        else entrypoint = json;
        break;
      }
      case 'EXPOSE':
        expose.push(...args.map(Number));
        break;
      case 'VOLUME':
        volumes.push(...jsonArray(instruction as JSONInstruction));
        break;
    }
  }
  return { stages, entrypoint, cmd, expose, volumes, globalArgs };
}
