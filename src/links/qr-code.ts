import QRCode from 'qrcode';

/*
 * A payment link as a QR code (the `qrcode` package): the REST door's image route and the
 * production /pay page both draw it here. Error correction M (15 %) keeps a printed or
 * on-screen code readable with a scratch or glare, at a size phones scan from a till.
 */

const OPTIONS = { errorCorrectionLevel: 'M', margin: 2 } as const;

/** The QR code of `text` as an SVG document. */
export function qrSvg(text: string): Promise<string> {
  return QRCode.toString(text, { ...OPTIONS, type: 'svg' });
}

/** The QR code of `text` as a PNG image, `width` pixels square. */
export function qrPng(text: string, width = 320): Promise<Buffer> {
  return QRCode.toBuffer(text, { ...OPTIONS, type: 'png', width });
}
