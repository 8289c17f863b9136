#!/usr/bin/env node
// The `callbacks` command. Its sources are TypeScript, run directly by Node 24's type stripping
// (the project pins Node 24 through its `node` devDependency, which npm puts first on the PATH).
import '../cli/main.ts';
