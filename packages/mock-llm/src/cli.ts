export async function main(_argv: string[]): Promise<void> {}
