export declare const consoleSourceDir: string;
export declare const consoleOutDir: string;
export declare function hashInputs(inputs: readonly string[]): string | null;
export declare function consoleBuildIsCurrent(outDir?: string): boolean;
export declare function buildConsole(opts?: {
  outDir?: string;
  quiet?: boolean;
}): Promise<{ outDir: string; files: Array<{ name: string; bytes: number }> }>;
