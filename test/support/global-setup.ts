// Placeholder replaced by the real Redis global setup shortly.
export default async function setup(): Promise<void> {}
